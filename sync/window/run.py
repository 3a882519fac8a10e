"""``run_window``: the whole sync of one upstream PR window, as a readable sequence of stages.

resolve window -> translate base/theirs (cached) -> merge each file -> questions -> worktree + branch
-> commit 1 (markers kept) with reports and the new state. All checks run before anything is created,
so a bad input changes nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from sync.decisions import load_recorded
from sync.reports import ReportContext, build_reports, report_dir_name
from sync.reports.questions import Question, build_questions
from sync.window.changes import UpstreamChange, changed_files
from sync.window.errors import SyncError
from sync.window.filemerge import FileOutcome
from sync.window.gitio import (
    BlobReader,
    GitError,
    commit_date,
    deleted_paths_in_history,
    dirty_paths,
    git_text,
    is_git_repo,
    ls_tree,
    rev_parse,
)
from sync.window.history import Window, WindowError, resolve_window
from sync.window.messages import merge_message, outcome_totals
from sync.window.parallel import pretranslate
from sync.window.plan import Downstream, merge_labels, plan_change, translation_jobs
from sync.window.progress import stage, stage_progress
from sync.window.state import STATE_PATH, SyncState, read_state
from sync.window.translation import TranslateFn, TranslationCache, translate_one, translator_fingerprint
from sync.window.worktree import (
    branch_exists,
    branch_name,
    commit_paths,
    create_worktree,
    default_worktree_path,
    remove_worktree,
    write_files,
    write_outcomes,
)  # fmt: skip


@dataclass
class WindowResult:
    """What a window run produced: where to look, and what happened to every file."""

    window: Window
    branch: str
    worktree: Path
    report_dir: Path
    outcomes: list[FileOutcome]
    questions: list[Question]
    commits: list[str]
    counts: dict[str, int] = field(default_factory=dict)
    cache_hits: int = 0
    cache_misses: int = 0
    seconds: float = 0.0


def load_translator(
    downstream: Path, rules: Any, translate_fn: TranslateFn | None
) -> tuple[Any, TranslateFn]:
    """The real rules and translator unless injected (tests inject a trivial one for merge machinery)."""
    if rules is None:
        from sync.rules import load_rules

        local = downstream / "translations"
        rules = load_rules(local if any(local.glob("*.toml")) else None)
    if translate_fn is None:
        try:
            from sync.translate import translate_file
        except ImportError as exc:
            raise SyncError(
                f"the translator (sync.translate) is not importable: {exc}; install vime fully"
            ) from exc
        translate_fn = translate_file
    return rules, translate_fn


def check_repos(upstream: Path, downstream: Path) -> None:
    if not is_git_repo(upstream):
        raise SyncError(f"upstream {upstream} is not a git repository; pass --upstream PATH to a slime clone")
    if not is_git_repo(downstream):
        raise SyncError(
            f"downstream {downstream} is not a git repository; pass --downstream PATH to a vime clone"
        )
    if git_text(downstream, "rev-parse", "--is-bare-repository") == "true":
        raise SyncError(f"downstream {downstream} is a bare repository; pass a checkout of vime")
    if rev_parse(downstream, "HEAD") is None:
        raise SyncError(f"downstream {downstream} has no commits yet; commit the vime tree first")


def _needed_paths(changes: list[UpstreamChange], rules: Any, report_dir: str) -> set[str]:
    paths = {STATE_PATH, report_dir}
    for c in changes:
        for p in (c.old_path, c.new_path):
            mapped = rules.map_path(p) if p else None
            if mapped:
                paths.add(mapped)
    return paths


def check_clean(downstream: Path, needed: set[str]) -> None:
    dirty = dirty_paths(downstream)
    clash = sorted(p for p in dirty if p in needed or any(p.startswith(n.rstrip("/") + "/") for n in needed))
    if clash:
        more = f" (+{len(clash) - 3} more)" if len(clash) > 3 else ""
        raise SyncError(
            f"downstream has uncommitted changes in files this window merges: {', '.join(clash[:3])}{more}; "
            "commit or stash them first"
        )


def run_window(
    upstream: Path,
    downstream: Path,
    to_pr: int,
    from_pr: int | None = None,
    cutoff: str | None = None,
    per_pr: bool = False,
    console: Console | None = None,
    *,
    rules: Any = None,
    translate_fn: TranslateFn | None = None,
    worktree: Path | None = None,
    upstream_ref: str = "HEAD",
    use_cache: bool = True,
) -> WindowResult:
    """Sync upstream PRs (cutoff, #to] into a new branch of the downstream; raise SyncError on bad input."""
    started = time.perf_counter()
    console = console or Console(quiet=True)
    upstream, downstream = Path(upstream).resolve(), Path(downstream).resolve()
    check_repos(upstream, downstream)
    try:
        state = read_state(downstream)
    except ValueError as exc:
        raise SyncError(str(exc)) from exc
    if from_pr is None and cutoff is None and state is not None:
        cutoff, from_pr = state.cutoff, state.last_pr + 1
    with stage(console, "window") as found:
        try:
            window = resolve_window(upstream, to_pr, from_pr, cutoff, upstream_ref)
        except (WindowError, GitError) as exc:
            raise SyncError(str(exc)) from exc
        found.append(
            f"#{window.from_pr}..#{window.to_pr}, cutoff {window.cutoff[:8]}, {len(window.prs)} PRs, "
            f"{len(window.direct_pushes)} direct pushes, {len(window.late)} numbered in range but merged later"
        )
    branch = branch_name(window.from_pr, window.to_pr)
    if branch_exists(downstream, branch):
        raise SyncError(
            f"branch {branch} already exists in {downstream}; delete it or review it with `vime-sync status`"
        )
    worktree = (
        Path(worktree).resolve()
        if worktree
        else default_worktree_path(downstream, window.from_pr, window.to_pr)
    )
    if worktree.exists():
        raise SyncError(f"worktree path {worktree} already exists; remove it or pass --worktree PATH")
    with stage(console, "changed files") as found:
        rules, translate_fn = load_translator(downstream, rules, translate_fn)
        reports_rel = report_dir_name(window.from_pr, window.to_pr)
        changes = changed_files(upstream, window.cutoff, window.tip)
        check_clean(downstream, _needed_paths(changes, rules, reports_rel))
        found.append(f"{len(changes)} upstream files changed, downstream clean where needed")
    if state is not None and state.rules_hash != rules.hash:
        console.print(
            "[yellow]the rules changed since the last sync: base is translated with today's rules, so files "
            "the downstream never edited may show rule changes as conflicts; review them as such[/yellow]"
        )

    head = git_text(downstream, "rev-parse", "HEAD")
    cache_root = Path(git_text(downstream, "rev-parse", "--git-common-dir"))
    if not cache_root.is_absolute():
        cache_root = downstream / cache_root
    cache = TranslationCache(
        cache_root / "vime-sync-cache" if use_cache else None,
        translator_fingerprint(rules.hash, translate_fn),
    )
    labels = merge_labels(window.cutoff, window.tip)
    with BlobReader(upstream) as up_blobs, BlobReader(downstream) as down_blobs:
        down = Downstream(
            ls_tree(downstream, head), down_blobs.read, deleted_paths_in_history(downstream, head)
        )

        def translate(path: str, oid: str):  # noqa: ANN202 - closure over the cache
            return translate_one(path, oid, up_blobs.read, translate_fn, rules, cache)

        pretranslate(translation_jobs(changes, rules), up_blobs.read, translate_fn, rules, cache, console)
        if per_pr:
            from sync.window.perpr import per_pr_commits

            prepare = (downstream, branch, worktree, head)
            return per_pr_commits(window, upstream, rules, translate, down, prepare, console, started, cache)
        outcomes: list[FileOutcome] = []
        with stage_progress(console, f"translate + merge {len(changes)} files", len(changes)) as advance:
            for change in changes:
                outcomes.append(plan_change(change, rules, translate, down, labels))
                advance(change.path)
    with stage(console, "questions and reports") as found:
        questions, files = reports_for(window, branch, outcomes, downstream, head, state_for(window, rules))
        found.append(f"{len(questions)} questions, {len(files)} report files")
    with stage(console, "branch and commit 1") as found:
        create_worktree(downstream, branch, worktree, head)
        try:
            touched = write_outcomes(worktree, outcomes) + write_files(worktree, files)
            message = merge_message(window, outcomes, questions, reports_rel)
            sha = commit_paths(worktree, touched, message, commit_date(upstream, window.tip))
        except Exception:
            remove_worktree(downstream, branch, worktree)
            raise
        found.append(f"{branch} at {sha[:10]} in {worktree}")
    return WindowResult(
        window, branch, worktree, worktree / reports_rel, outcomes, questions, [sha], outcome_totals(outcomes),
        cache.hits, cache.misses, time.perf_counter() - started,
    )  # fmt: skip


def state_for(window: Window, rules: Any) -> SyncState:
    return SyncState(window.tip, window.to_pr, rules.hash, window.from_pr)


def reports_for(
    window: Window, branch: str, outcomes: list[FileOutcome], downstream: Path, head: str, state: SyncState
) -> tuple[list[Question], dict[str, bytes]]:
    """Questions (with recorded decisions applied as Settled) and every file commit 1 adds besides merges."""
    recorded = load_recorded(downstream, head)
    ctx = ReportContext(window, branch, outcomes)
    ctx.questions = build_questions(outcomes, ctx.prs_for, recorded.get)
    files = build_reports(ctx)
    files[STATE_PATH] = state.to_toml().encode()
    return ctx.questions, files
