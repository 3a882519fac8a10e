"""``follow``: mirror upstream PR by PR until the first PR that needs a person (or ``--until`` /
``--max``), each PR one transaction; and ``plan``, what a run would do (``--dry-run``, no writes).

Between PRs nothing is half-made: an interrupt rolls back the PR in progress and keeps the ones
before it, complete. A rerun starts with the PR at the tip when it is unfinished (answers given:
resolve it; a gate fix committed: gate it again), then goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from sync.follow.gate import StepGate
from sync.follow.pending import Pending, pending_at
from sync.follow.site import FollowSite, locate, tracked_changes
from sync.follow.step import StepContext, Translator, new_pr, resume
from sync.follow.steps import Step, Upcoming, cutoff_of, upcoming
from sync.ledger import StepSummary
from sync.model.errors import SyncError
from sync.model.names import FOLLOW_BRANCH
from sync.window.checks import check_repos, git_common_dir, toplevel
from sync.window.decisions_doc import committed_decisions, load_decisions, merge_answers
from sync.window.history import UpstreamCommit
from sync.window.parallel import default_workers
from sync.window.run import load_translator
from sync.window.state import read_state
from sync.window.transaction import transaction, transaction_series
from sync.window.translation import TranslateFn, translator_fingerprint

if TYPE_CHECKING:
    from sync.rules import RuleSet


@dataclass(frozen=True)
class FollowOptions:
    """What a follow run was asked for (built once from the command line)."""

    until: int | None = None
    max_prs: int | None = None
    from_pr: int | None = None  # first run only: the first PR (the cutoff is PR from-1)
    cutoff: str | None = None  # first run only: the cutoff commit
    worktree: Path | None = None
    upstream_ref: str = "HEAD"
    gate: bool = True
    use_cache: bool = True


@dataclass(frozen=True)
class StepOutcome:
    """One PR a run finished (or stopped at)."""

    pr: int
    label: str
    summary: StepSummary | None
    stop: str | None
    resumed: bool


@dataclass
class FollowResult:
    worktree: Path
    steps: list[StepOutcome] = field(default_factory=list)
    stop: str | None = None  # why the run stopped at a PR that needs a person
    up_to_date: bool = False  # nothing left after the cutoff (or --until reached)
    waiting: list[UpstreamCommit] = field(default_factory=list)  # direct pushes at the tip
    left: int = 0  # PRs after the last one taken, up to --until (when --max ended the run)


class FollowInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during a follow run: the PR in progress was rolled back, the ones before kept."""

    def __init__(self, result: FollowResult, in_progress: str | None) -> None:
        super().__init__(in_progress or "between PRs")
        self.result, self.in_progress = result, in_progress


OnStep = Callable[[StepOutcome], None]


def _outcome(ctx: StepContext, label: str, resumed: bool) -> StepOutcome:
    return StepOutcome(ctx.pr, label, ctx.summary, ctx.stop, resumed)


def _translator(
    site: FollowSite, rules: RuleSet | None, translate_fn: TranslateFn | None, use_cache: bool
) -> Translator:
    where = site.worktree if site.worktree_exists else site.downstream
    rules, translate_fn = load_translator(where, rules, translate_fn)
    root = site.git_dir / "vime-sync-cache" if use_cache else None
    return Translator(rules, translate_fn, translator_fingerprint(rules.hash, translate_fn), root)


def _cutoff(site: FollowSite, options: FollowOptions, upstream: Path) -> str:
    try:
        state = read_state(site.downstream, site.tip)
    except ValueError as exc:
        raise SyncError(str(exc)) from None
    if options.from_pr is not None or options.cutoff is not None:
        return cutoff_of(upstream, options.from_pr, options.cutoff, options.upstream_ref)
    if state is None:
        raise SyncError(
            "no state file in the downstream (no sync yet): pass --from N (the first PR to mirror) or --cutoff COMMIT"
        )
    return state.cutoff


def _check_site(site: FollowSite, pending: Pending | None, options: FollowOptions) -> None:
    if site.branch_exists and (options.from_pr is not None or options.cutoff is not None):
        raise SyncError(
            f"{FOLLOW_BRANCH} exists and goes on from its state file; drop --from/--cutoff (or run "
            "`vime-sync window` for another range)"
        )
    if not site.worktree_exists:
        return
    dirty = tracked_changes(site.worktree, pending.report_rel if pending else None)
    if dirty:
        raise SyncError(
            f"{site.worktree} has uncommitted changes ({dirty[0]}{' ...' if len(dirty) > 1 else ''}); commit "
            "or discard them before follow (only a waiting PR's decisions.json may be edited)"
        )
    if pending is not None and site.fast_forward_from is not None:
        raise SyncError(
            f"#{pending.pr} on {FOLLOW_BRANCH} is unfinished while the downstream's HEAD moved past it; "
            f"finish it first (answer its questions, then run follow)"
        )


def follow(
    upstream: Path,
    downstream: Path,
    options: FollowOptions,
    *,
    rules: RuleSet | None = None,
    translate_fn: TranslateFn | None = None,
    on_step: OnStep | None = None,
) -> FollowResult:
    """Mirror PRs after the cutoff one by one; stop at the first that needs a person.

    Raises SyncError on bad input (nothing written for the PR it was about), FollowInterrupted on
    Ctrl-C / SIGTERM (the PR in progress rolled back, the ones before it kept).
    """
    upstream, downstream = Path(upstream).resolve(), Path(downstream).resolve()
    check_repos(upstream, downstream)
    downstream = toplevel(downstream)
    git_dir = git_common_dir(downstream)
    default_workers()  # VIME_SYNC_JOBS is checked before anything is written
    result = FollowResult(worktree=options.worktree or downstream)
    translator: Translator | None = None
    gate: StepGate | None = None
    current: str | None = None
    on_step = on_step or (lambda _o: None)
    try:
        with transaction_series():
            while options.max_prs is None or len(result.steps) < options.max_prs:
                current = None
                with transaction(git_dir, "vime-sync follow") as tx:
                    site = locate(downstream, options.worktree)
                    result.worktree = site.worktree
                    pending = pending_at(site.worktree) if site.worktree_exists else None
                    _check_site(site, pending, options)
                    translator = translator or _translator(site, rules, translate_fn, options.use_cache)
                    if options.gate and gate is None:
                        gate = StepGate(site.worktree)
                    if pending is not None:
                        current = f"#{pending.pr}"
                        ctx = resume(tx, site, pending, gate)
                        outcome = _outcome(ctx, current, resumed=True)
                    else:
                        cutoff = _cutoff(site, options, upstream)
                        up = upcoming(upstream, cutoff, options.until, options.upstream_ref)
                        if not up.steps:
                            result.up_to_date, result.waiting = True, up.waiting
                            break
                        step = up.steps[0]
                        current = step.label
                        ctx = new_pr(tx, site, step, cutoff, upstream, translator, gate)
                        outcome = _outcome(ctx, step.label, resumed=False)
                        result.left = len(up.steps) - 1
                result.steps.append(outcome)
                options = replace(options, from_pr=None, cutoff=None)  # the branch's state file from here on
                on_step(outcome)
                if outcome.stop:
                    result.stop = outcome.stop
                    break
                if options.until is not None and outcome.pr == options.until:
                    result.up_to_date = True
                    break
    except KeyboardInterrupt as exc:
        raise FollowInterrupted(result, current) from exc
    return result


@dataclass
class FollowPlan:
    """What a run would do (``--dry-run``): where it works, the PR it would finish, the PRs it would take."""

    site: FollowSite
    cutoff: str | None
    pending: Pending | None
    open_decide: int  # of the pending PR, with the reviewer's current answers
    upcoming: Upcoming
    files: dict[str, int] = field(default_factory=dict)  # upstream sha -> files it changed


def plan(upstream: Path, downstream: Path, options: FollowOptions) -> FollowPlan:
    """Everything a run would read to decide what to do, and nothing written (not even the cache)."""
    from sync.follow.step import open_decide
    from sync.window.history import first_parent_log

    upstream, downstream = Path(upstream).resolve(), Path(downstream).resolve()
    check_repos(upstream, downstream)
    site = locate(toplevel(downstream), options.worktree)
    pending = pending_at(site.worktree) if site.worktree_exists else None
    _check_site(site, pending, options)
    open_count = 0
    if pending is not None and pending.resolved is None:
        rel = f"{pending.report_rel}/decisions.json"
        trusted = committed_decisions(site.worktree, pending.first, rel)
        answers = load_decisions(site.worktree / rel)
        open_count = len(open_decide(merge_answers(trusted, answers, rel)))
    cutoff = _cutoff(site, options, upstream)
    up = upcoming(upstream, cutoff, options.until, options.upstream_ref)
    steps = up.steps[: options.max_prs] if options.max_prs is not None else up.steps
    files: dict[str, int] = {}
    if steps:
        for c in first_parent_log(upstream, f"{cutoff}..{steps[-1].tip.sha}", with_files=True):
            files[c.sha] = len(c.files)
    return FollowPlan(site, cutoff, pending, open_count, Upcoming(steps, up.waiting), files)


__all__ = ["FollowInterrupted", "FollowOptions", "FollowPlan", "FollowResult", "Step", "follow", "plan"]
