"""``run_window``: the whole sync of one upstream PR window, as a readable sequence of stages.

checks (nothing written yet) -> translate base/theirs (cached) -> merge each file -> questions and
reports -> worktree + branch -> commit 1 (markers kept) with reports and the new state. The stages
run inside a transaction (``sync.window.transaction``): on any exception, Ctrl-C or SIGTERM every
branch, worktree, commit and cache entry this run made is removed again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from sync.reports import report_dir_name
from sync.reports.questions import Question
from sync.window.changes import UpstreamChange, changed_files
from sync.window.checks import (
    check_clean,
    check_order,
    check_repos,
    check_worktree_path,
    check_writable,
    git_common_dir,
    toplevel,
)
from sync.window.errors import SyncError
from sync.window.filemerge import FileOutcome
from sync.window.gitio import (
    BlobReader,
    GitError,
    commit_date,
    deleted_paths_in_history,
    git_text,
    ls_tree,
    rev_parse,
)
from sync.window.history import Window, WindowError, resolve_window
from sync.window.messages import merge_message, outcome_totals
from sync.window.parallel import default_workers, pretranslate
from sync.window.perpr import PER_PR_STAGES
from sync.window.plan import Downstream, merge_labels, plan_change, translation_jobs
from sync.window.progress import stage, stage_progress
from sync.window.provenance import WindowProvenance
from sync.window.result import WindowResult, reports_for, state_for
from sync.window.state import SyncState, read_state
from sync.window.transaction import Stage, Transaction, run_stages, transaction
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

if TYPE_CHECKING:
    from sync.rules import RuleSet


def load_translator(
    downstream: Path, rules: RuleSet | None, translate_fn: TranslateFn | None
) -> tuple[RuleSet, TranslateFn]:
    """The real rules and translator unless injected (tests inject a trivial one for merge machinery)."""
    if rules is None:
        from sync.rules import load_rules

        local = downstream / "translations"
        rules = load_rules(local if any(local.glob("*.toml")) else None)
    if translate_fn is None:
        try:
            from sync.conformance.stage import translate_checked  # translate_file + the conformance check
        except ImportError as exc:
            raise SyncError(
                f"the translator (sync.translate) is not importable: {exc}; install vime fully"
            ) from exc
        translate_fn = translate_checked
    return rules, translate_fn


@dataclass
class WindowRun:
    """Everything the stages of one window share; filled in as the stages run."""

    upstream: Path
    downstream: Path
    window: Window
    branch: str
    worktree: Path
    reports_rel: str
    rules: RuleSet
    translate_fn: TranslateFn
    changes: list[UpstreamChange]
    state: SyncState | None
    head: str
    cache: TranslationCache
    console: Console
    tx: Transaction | None = None
    down: Downstream | None = None
    up_read: Any = None
    outcomes: list[FileOutcome] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    commits: list[str] = field(default_factory=list)

    def translate(self, path: str, oid: str):  # -> a Translated
        return translate_one(path, oid, self.up_read, self.translate_fn, self.rules, self.cache)


def stage_translate(run: WindowRun) -> None:
    assert run.tx is not None
    run.tx.undo("translation cache entries", run.cache.forget_written)
    jobs = translation_jobs(run.changes, run.rules)
    pretranslate(jobs, run.up_read, run.translate_fn, run.rules, run.cache, run.console)


def stage_merge(run: WindowRun) -> None:
    assert run.down is not None
    labels = merge_labels(run.window.cutoff, run.window.tip)
    with stage_progress(
        run.console, f"translate + merge {len(run.changes)} files", len(run.changes)
    ) as advance:
        for change in run.changes:
            run.outcomes.append(plan_change(change, run.rules, run.translate, run.down, labels))
            advance(change.path)


def stage_reports(run: WindowRun) -> None:
    with stage(run.console, "questions and reports") as found:
        state = state_for(run.window, run.rules)
        provenance = WindowProvenance(run.upstream, run.window, run.translate)
        run.questions, run.files = reports_for(
            run.window, run.branch, run.outcomes, run.downstream, run.head, state, run.rules, provenance
        )
        found.append(f"{len(run.questions)} questions, {len(run.files)} report files")


def stage_worktree(run: WindowRun) -> None:
    assert run.tx is not None
    run.tx.undo(f"branch {run.branch} and worktree {run.worktree}", lambda: undo_worktree(run))
    try:
        create_worktree(run.downstream, run.branch, run.worktree, run.head)
    except GitError as exc:
        raise SyncError(
            f"could not create the worktree {run.worktree} ({exc}); fix that (a failing post-checkout hook, "
            "a read-only folder) and run again"
        ) from None


def undo_worktree(run: WindowRun) -> None:
    """Remove what ``create_worktree`` made, even half-made (the checks proved neither existed before)."""
    if branch_exists(run.downstream, run.branch) or run.worktree.exists():
        remove_worktree(run.downstream, run.branch, run.worktree)


def stage_commit(run: WindowRun) -> None:
    with stage(run.console, "branch and commit 1") as found:
        touched = write_outcomes(run.worktree, run.outcomes) + write_files(run.worktree, run.files)
        message = merge_message(run.window, run.outcomes, run.questions, run.reports_rel)
        sha = commit_paths(run.worktree, touched, message, commit_date(run.upstream, run.window.tip))
        run.commits.append(sha)
        found.append(f"{run.branch} at {sha[:10]} in {run.worktree}")


WINDOW_STAGES: list[Stage] = [
    ("translate", stage_translate),
    ("merge", stage_merge),
    ("reports", stage_reports),
    ("worktree", stage_worktree),
    ("commit", stage_commit),
]
PER_PR_WINDOW_STAGES: list[Stage] = [
    ("translate", stage_translate),
    ("worktree", stage_worktree),
    *PER_PR_STAGES,
]


def prepare(
    upstream: Path,
    downstream: Path,
    to_pr: int,
    from_pr: int | None,
    cutoff: str | None,
    console: Console,
    rules: RuleSet | None,
    translate_fn: TranslateFn | None,
    worktree: Path | None,
    upstream_ref: str,
    use_cache: bool,
) -> WindowRun:
    """Every check, and every input read, before the first write; raise SyncError on bad input."""
    downstream = toplevel(downstream)
    git_dir = git_common_dir(downstream)
    try:
        state = read_state(downstream)
    except ValueError as exc:
        if from_pr is None and cutoff is None:
            raise SyncError(str(exc)) from exc
        console.print(f"[yellow]{exc}: going by --from/--cutoff; commit 1 writes a new one[/yellow]")
        state = None
    if from_pr is None and cutoff is None and state is not None:
        cutoff, from_pr = state.cutoff, state.last_pr + 1
    if rev_parse(upstream, upstream_ref) is None:
        raise SyncError(
            f"--upstream-ref {upstream_ref!r} is not a branch or commit of {upstream}; pass an existing one"
        )
    with stage(console, "window") as found:
        try:
            window = resolve_window(upstream, to_pr, from_pr, cutoff, upstream_ref)
        except (WindowError, GitError) as exc:
            raise SyncError(str(exc)) from exc
        check_order(window)
        found.append(
            f"#{window.from_pr}..#{window.to_pr}, cutoff {window.cutoff[:8]}, {len(window.prs)} PRs, "
            f"{len(window.direct_pushes)} direct pushes, {len(window.late)} numbered in range but merged later"
        )
    branch = branch_name(window.from_pr, window.to_pr)
    if branch_exists(downstream, branch):
        raise SyncError(
            f"branch {branch} already exists in {downstream}; review it with `vime-sync status --worktree PATH`, "
            f"or delete it (git branch -D {branch}) to sync again"
        )
    worktree = (
        Path(worktree).resolve()
        if worktree
        else default_worktree_path(downstream, window.from_pr, window.to_pr)
    )
    check_worktree_path(downstream, worktree, git_dir)
    check_writable(git_dir, worktree)
    with stage(console, "changed files") as found:
        rules, translate_fn = load_translator(downstream, rules, translate_fn)
        reports_rel = report_dir_name(window.from_pr, window.to_pr)
        changes = changed_files(upstream, window.cutoff, window.tip)
        check_clean(downstream, changes, rules, reports_rel)
        found.append(f"{len(changes)} upstream files changed, downstream clean where needed")
    if state is not None and state.rules_hash != rules.hash:
        console.print(
            "[yellow]the rules changed since the last sync: base is translated with today's rules, so files "
            "the downstream never edited may show rule changes as conflicts; review them as such[/yellow]"
        )
    default_workers()  # VIME_SYNC_JOBS is checked here, before anything is written
    cache = TranslationCache(
        git_dir / "vime-sync-cache" if use_cache else None, translator_fingerprint(rules.hash, translate_fn)
    )
    head = git_text(downstream, "rev-parse", "HEAD")
    return WindowRun(
        upstream, downstream, window, branch, worktree, reports_rel, rules, translate_fn, changes, state, head,
        cache, console,
    )  # fmt: skip


def run_window(
    upstream: Path,
    downstream: Path,
    to_pr: int,
    from_pr: int | None = None,
    cutoff: str | None = None,
    per_pr: bool = False,
    console: Console | None = None,
    *,
    rules: RuleSet | None = None,
    translate_fn: TranslateFn | None = None,
    worktree: Path | None = None,
    upstream_ref: str = "HEAD",
    use_cache: bool = True,
) -> WindowResult:
    """Sync upstream PRs (cutoff, #to] into a new branch of the downstream: all of it, or nothing.

    Raises SyncError on bad input (before anything is written); any failure later rolls back.
    """
    started = time.perf_counter()
    console = console or Console(quiet=True)
    upstream, downstream = Path(upstream).resolve(), Path(downstream).resolve()
    check_repos(upstream, downstream)
    git_dir = git_common_dir(downstream)
    if not git_dir.exists():
        raise SyncError(f"downstream {downstream} has no .git folder; pass a checkout of vime")
    with transaction(git_dir, "vime-sync window") as tx:
        run = prepare(
            upstream, downstream, to_pr, from_pr, cutoff, console, rules, translate_fn, worktree,
            upstream_ref, use_cache,
        )  # fmt: skip
        run.tx = tx
        with BlobReader(run.upstream) as up_blobs, BlobReader(run.downstream) as down_blobs:
            run.up_read = up_blobs.read
            run.down = Downstream(
                ls_tree(run.downstream, run.head), down_blobs.read,
                deleted_paths_in_history(run.downstream, run.head),
            )  # fmt: skip
            stages = PER_PR_WINDOW_STAGES if per_pr else WINDOW_STAGES
            run_stages(tx, stages, run)
    return WindowResult(
        run.window, run.branch, run.worktree, run.worktree / run.reports_rel, run.outcomes, run.questions,
        run.commits, outcome_totals(run.outcomes), run.cache.hits, run.cache.misses, time.perf_counter() - started,
    )  # fmt: skip
