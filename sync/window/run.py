"""``run_window``: the whole sync of one upstream PR window, as a readable sequence of stages.

checks (nothing written yet) -> translate base/theirs (cached) -> merge each file -> questions and
reports -> worktree + branch -> commit 1 (markers kept) with reports and the new state. The stages
run inside a transaction (``sync.window.transaction``): on any exception, Ctrl-C or SIGTERM every
branch, worktree, commit and cache entry this run made is removed again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from sync.gitio import (
    BlobReader,
    GitError,
    deleted_paths_in_history,
    git_text,
    ls_tree,
    rev_parse,
)
from sync.model.errors import SyncError
from sync.model.names import branch_name, merge_subject, report_dir, window_label
from sync.reports.questions import asks_provenance
from sync.window.changes import changed_files
from sync.window.checks import (
    check_clean,
    check_collisions,
    check_not_below_cutoff,
    check_order,
    check_paths_fit,
    check_repos,
    check_worktree_path,
    check_writable,
    checked_out_in,
    downstream_layout,
    git_common_dir,
    toplevel,
)
from sync.window.history import WindowError, resolve_window
from sync.window.messages import outcome_totals
from sync.window.parallel import default_workers, pretranslate
from sync.window.perpr import stage_pr_commits, stage_reports_commit
from sync.window.plan import Downstream, merge_labels, plan_change, translation_jobs
from sync.window.progress import stage, stage_progress
from sync.window.reports_stage import build_reports, write_reports
from sync.window.result import WindowResult
from sync.window.state import read_state
from sync.window.transaction import Stage, run_stages, transaction
from sync.window.translation import TranslateFn, TranslationCache, translator_fingerprint
from sync.window.window_run import WindowRun, text_translator
from sync.window.worktree import (
    branch_exists,
    commit_paths,
    create_worktree,
    default_worktree_path,
    write_outcomes,
)  # fmt: skip

if TYPE_CHECKING:
    from sync.rules import RuleSet


def branch_exists_line(downstream: Path, branch: str) -> str:
    """The refusal for an existing window branch, with the commands that remove it (a branch checked
    out in a worktree cannot be deleted before that worktree is removed)."""
    where = checked_out_in(downstream, branch)
    if where is None:
        return (
            f"branch {branch} already exists in {downstream}; review it, or delete it to sync again: "
            f"git -C {downstream} branch -D {branch}"
        )
    return (
        f"branch {branch} already exists (checked out in {where}); review it with `vime-sync status --worktree "
        f"{where}`, or remove it to sync again: git -C {downstream} worktree remove --force {where}; "
        f"git -C {downstream} branch -D {branch}"
    )


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


def stage_translate(run: WindowRun) -> None:
    assert run.tx is not None
    run.tx.undo("translation cache entries", run.cache.forget_written)
    jobs = translation_jobs(run.changes, run.rules)
    pretranslate(jobs, run.up_read, run.translate_fn, run.rules, run.cache, run.console)


def stage_translate_steps(run: WindowRun) -> None:
    """``--per-pr``: translate ahead what every step merges (the files changed from the cutoff to each
    commit, at that commit), not only the window's two ends."""
    assert run.tx is not None
    run.tx.undo("translation cache entries", run.cache.forget_written)
    jobs = translation_jobs(run.changes, run.rules)
    for c in run.window.commits:
        run.step_changes[c.sha] = changed_files(run.upstream, run.window.cutoff, c.sha)
        jobs += translation_jobs(run.step_changes[c.sha], run.rules)
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


def stage_provenance(run: WindowRun) -> None:
    """Translate ahead, on the worker pool, every version that the files the queue asks about went
    through in the window (the per-hunk provenance replays them), with the text-only translator."""
    assert run.tx is not None
    asked = [o for o in run.outcomes if asks_provenance(o)]
    jobs = [j for j in run.window_provenance().versions_to_translate(asked) if j not in run.cache.memory]
    if run.text_cache is None:  # an injected translator: the window's own cache (its undo is registered)
        pretranslate(jobs, run.up_read, run.translate_fn, run.rules, run.cache, run.console)
        return
    run.tx.undo("provenance translation cache entries", run.text_cache.forget_written)
    jobs = [j for j in jobs if run.cache.get(*j) is None]
    text_fn = text_translator(run.translate_fn)
    pretranslate(
        jobs, run.up_read, text_fn, run.rules, run.text_cache, run.console, title="provenance: translate"
    )


def stage_reports(run: WindowRun) -> None:
    with stage(run.console, "questions and reports") as found:
        build_reports(run)
        found.append(f"{len(run.questions)} questions, {len(run.files)} report files")


def stage_worktree(run: WindowRun) -> None:
    assert run.tx is not None
    made = [str(p) for p in run.worktree.parents if not p.exists()]  # git makes them: they go too
    run.tx.undo_step(
        "worktree", f"branch {run.branch} and worktree {run.worktree}",
        repo=str(run.downstream), branch=run.branch, path=str(run.worktree), made=made,
    )  # fmt: skip
    subject = merge_subject(window_label(run.window.from_pr, run.window.to_pr))
    run.tx.complete_when(run.downstream, run.branch, subject)
    try:
        create_worktree(run.downstream, run.branch, run.worktree, run.head)
    except GitError as exc:
        raise SyncError(
            f"could not create the worktree {run.worktree} ({exc}); fix that (a failing post-checkout hook, "
            "a read-only folder) and run again"
        ) from None


def stage_commit(run: WindowRun) -> None:
    with stage(run.console, "branch and commit 1") as found:
        sha = commit_paths(run.worktree, *write_reports(run, write_outcomes(run.worktree, run.outcomes)))
        run.commits.append(sha)
        found.append(f"{run.branch} at {sha[:10]} in {run.worktree}")


WINDOW_STAGES: list[Stage] = [
    ("translate", stage_translate),
    ("merge", stage_merge),
    ("provenance", stage_provenance),
    ("reports", stage_reports),
    ("worktree", stage_worktree),
    ("commit", stage_commit),
]
PER_PR_WINDOW_STAGES: list[Stage] = [
    ("translate", stage_translate_steps),
    ("worktree", stage_worktree),
    ("pr commits", stage_pr_commits),
    ("provenance", stage_provenance),
    ("reports commit", stage_reports_commit),
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
    rewind: bool = False,
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
        if state is not None and not rewind:
            check_not_below_cutoff(upstream, window, state)
        found.append(
            f"#{window.from_pr}..#{window.to_pr}, cutoff {window.cutoff[:8]}, {len(window.prs)} PRs, "
            f"{len(window.direct_pushes)} direct pushes, {len(window.late)} numbered in range but merged later, "
            f"{len(window.early)} merged before the cutoff"
        )
    branch = branch_name(window.from_pr, window.to_pr)
    if branch_exists(downstream, branch):
        raise SyncError(branch_exists_line(downstream, branch))
    worktree = (
        Path(worktree).resolve()
        if worktree
        else default_worktree_path(downstream, window.from_pr, window.to_pr)
    )
    check_worktree_path(downstream, worktree, git_dir)
    check_writable(git_dir, worktree)
    with stage(console, "changed files") as found:
        rules, translate_fn = load_translator(downstream, rules, translate_fn)
        reports_rel = report_dir(window.from_pr, window.to_pr)
        changes = changed_files(upstream, window.cutoff, window.tip)
        layout = downstream_layout(downstream)
        check_clean(downstream, changes, rules, reports_rel, layout)
        check_collisions(upstream, window.tip, changes, rules, layout)
        check_paths_fit(downstream, changes, rules, layout, reports_rel)
        found.append(f"{len(changes)} upstream files changed, downstream clean where needed")
    if state is not None and state.rules_hash != rules.hash:
        console.print(
            "[yellow]the rules changed since the last sync: base is translated with today's rules, so files "
            "the downstream never edited may show rule changes as conflicts; review them as such[/yellow]"
        )
    default_workers()  # VIME_SYNC_JOBS is checked here, before anything is written
    root = git_dir / "vime-sync-cache" if use_cache else None
    cache = TranslationCache(root, translator_fingerprint(rules.hash, translate_fn))
    text_fn = text_translator(translate_fn)
    text_cache = (
        TranslationCache(root, translator_fingerprint(rules.hash, text_fn))
        if text_fn is not translate_fn
        else None
    )
    head = git_text(downstream, "rev-parse", "HEAD")
    return WindowRun(
        upstream, downstream, window, branch, worktree, reports_rel, rules, translate_fn, changes, state, head,
        cache, console, text_cache=text_cache,
    )  # fmt: skip


def timed(stages: list[Stage]) -> list[Stage]:
    """The stages, each recording its wall seconds in ``run.timings`` (for ``--timings``)."""

    def wrap(name: str, fn: Callable[[WindowRun], None]) -> Callable[[WindowRun], None]:
        def run_timed(run: WindowRun) -> None:
            start = time.perf_counter()
            try:
                fn(run)
            finally:
                run.timings[name] = time.perf_counter() - start

        return run_timed

    return [(name, wrap(name, fn)) for name, fn in stages]


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
    rewind: bool = False,
    timings_in_summary: bool = False,
) -> WindowResult:
    """Sync upstream PRs (cutoff, #to] into a new branch of the downstream: all of it, or nothing.

    Raises SyncError on bad input (before anything is written); any failure later rolls back. A
    window that starts below the state file's cutoff is refused unless ``rewind``. The result holds
    the seconds of each stage; ``timings_in_summary`` writes those known by then into SUMMARY.md.
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
            upstream_ref, use_cache, rewind,
        )  # fmt: skip
        run.tx, run.with_timings = tx, timings_in_summary
        with BlobReader(run.upstream) as up_blobs, BlobReader(run.downstream) as down_blobs:
            run.up_read = up_blobs.read
            run.down = Downstream(
                ls_tree(run.downstream, run.head), down_blobs.read,
                deleted_paths_in_history(run.downstream, run.head),
            )  # fmt: skip
            run.timings["checks"] = time.perf_counter() - started
            run_stages(tx, timed(PER_PR_WINDOW_STAGES if per_pr else WINDOW_STAGES), run)
    return WindowResult(
        run.window, run.branch, run.worktree, run.worktree / run.reports_rel, run.outcomes, run.questions,
        run.commits, outcome_totals(run.outcomes), run.cache.hits, run.cache.misses, time.perf_counter() - started,
        run.timings,
    )  # fmt: skip
