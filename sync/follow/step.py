"""One followed PR as one transaction: the complete PR on the follow branch, or nothing.

A new PR runs the window's own stages (translate, merge, reports: ``sync.window.run``) on the
window cutoff..PR, then commits them on the follow branch (commit 1, exactly what ``window``
commits, plus follow's trailer), resolves by itself when no question needs a person (recorded
decisions and proposed defaults, through resolve's own stages), gates the tree against the one
before it and commits the verdict with the PR's summary in the ledger. A PR with an open Decide
question stops after commit 1, its queue as ``window`` leaves it; a rerun resolves it with the
reviewer's answers (``resume``). Each write registers its undo first (``sync.window.transaction``).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from sync.follow.gate import StepGate, gate_files, verdict
from sync.follow.pending import Pending
from sync.follow.site import FollowSite, make
from sync.follow.steps import Step, step_window
from sync.gate.regression import RegressionResult
from sync.gitio import BlobReader, commit_date, deleted_paths_in_history, git_text, ls_tree
from sync.ledger import LEDGER_PATH, StepSummary, ledger_files, load_ledger, parse_ledger, with_summary
from sync.merge.filemerge import FileOutcome
from sync.model.errors import SyncError
from sync.model.names import (
    FOLLOW_BRANCH,
    FOLLOW_TRAILER,
    follow_gate_subject,
    report_dir,
    window_label,
    window_name,
)
from sync.model.outcome import Outcome
from sync.model.question import Tier
from sync.reports.questions import Question, expand_sites, tier_counts
from sync.window.changes import changed_files
from sync.window.checks import check_clean
from sync.window.decisions_doc import committed_decisions, load_decisions, merge_answers, parse_decisions
from sync.window.messages import merge_message
from sync.window.plan import Downstream
from sync.window.resolve import RESOLVE_STAGES, plan_resolve, register_restore
from sync.window.run import stage_merge, stage_reports, stage_translate
from sync.window.transaction import Stage, Transaction, run_stages
from sync.window.translation import TranslateFn, TranslationCache
from sync.window.window_run import WindowRun
from sync.window.worktree import commit_paths, inside

if TYPE_CHECKING:
    from sync.rules import RuleSet


@dataclass(frozen=True)
class Translator:
    """The rules and translator of one follow run, loaded once (each PR gets its own cache object, so
    a rollback forgets only that PR's new cache entries)."""

    rules: RuleSet
    translate_fn: TranslateFn
    fingerprint: str
    cache_root: Path | None

    def cache(self) -> TranslationCache:
        return TranslationCache(self.cache_root, self.fingerprint)


@dataclass
class StepContext:
    """What the stages of one followed PR share."""

    site: FollowSite
    pr: int
    report_rel: str
    before: str  # the follow branch before this PR: commit 1's parent
    date: str  # the upstream merge's commit date, which dates follow's commits (reruns give equal trees)
    gate: StepGate | None
    started: float = field(default_factory=time.perf_counter)
    run: WindowRun | None = None  # a new PR: the window's shared context
    pending: Pending | None = None  # a PR resumed after its answers or a gate fix
    tx: Transaction | None = None
    tiers: dict[str, int] = field(default_factory=dict)
    person: bool = False
    prior_seconds: float = 0.0
    stop: str | None = None
    gate_result: RegressionResult | None = None
    summary: StepSummary | None = None

    @property
    def name(self) -> str:
        return window_name(self.pr, self.pr)

    @property
    def worktree(self) -> Path:
        return self.site.worktree

    def seconds(self) -> float:
        return self.prior_seconds + time.perf_counter() - self.started

    def final(self, subject: str) -> None:
        """The PR is complete once the follow branch's tip has ``subject`` (a SIGKILL right after that
        commit leaves nothing for ``--repair`` to undo)."""
        assert self.tx is not None
        self.tx.complete_when(self.site.downstream, FOLLOW_BRANCH, subject)


# --- writing on the follow branch, undoably --------------------------------------------------------


def planned_writes(
    outcomes: list[FileOutcome], files: dict[str, bytes]
) -> list[tuple[str, bytes | None, str]]:
    """(path, bytes or None to delete, git mode or "") for everything a commit writes, as
    ``write_outcomes`` and ``write_files`` would write it."""
    writes: list[tuple[str, bytes | None, str]] = []
    for out in outcomes:
        writes += [(old, None, "") for old in out.remove]
        if out.data is not None and out.outcome != Outcome.NOT_MIRRORED:
            writes.append((out.path, out.data, out.mode))
    return writes + [(rel, data, "") for rel, data in files.items()]


def commit_on_branch(
    ctx: StepContext, files: dict[str, bytes], message: str, outcomes: list[FileOutcome] | None = None
) -> str:
    """Write ``outcomes`` and ``files`` into the follow worktree and commit them. Each write registers
    its undo first, on the journal too (``--repair`` after a SIGKILL): the file's earlier bytes, then
    the branch back to where it was."""
    assert ctx.tx is not None
    wt = ctx.worktree
    head = git_text(wt, "rev-parse", "HEAD")
    writes = planned_writes(outcomes or [], files)
    for rel, _data, _mode in writes:
        inside(wt, rel)  # every path checked before the first write
    ctx.tx.undo_step("reset", f"{FOLLOW_BRANCH} back to {head[:10]}", worktree=str(wt), before=head)
    for rel, data, mode in writes:
        target = wt / rel
        register_restore(ctx.tx, target)
        if data is None:
            if target.is_file() or target.is_symlink():
                target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():
            target.unlink()
        target.write_bytes(data)
        if mode:
            os.chmod(target, 0o755 if mode == "100755" else 0o644)
    return commit_paths(wt, [rel for rel, _d, _m in writes], message, ctx.date)


def _with_summary(ledger: bytes, window: str, summary: StepSummary) -> dict[str, bytes]:
    return ledger_files(with_summary(parse_ledger(ledger.decode("utf-8", "replace")), window, summary))


def _summary(ctx: StepContext, gate: str) -> StepSummary:
    t = ctx.tiers
    return StepSummary(
        t.get(Tier.DECIDE, 0), t.get(Tier.CONFIRM, 0), t.get(Tier.SETTLED, 0), ctx.person, ctx.seconds(), gate
    )


# --- the stages ----------------------------------------------------------------------------------


def stage_site(ctx: StepContext) -> None:
    assert ctx.tx is not None
    make(ctx.tx, ctx.site)


def stage_window_translate(ctx: StepContext) -> None:
    assert ctx.run is not None
    stage_translate(ctx.run)


def stage_window_merge(ctx: StepContext) -> None:
    assert ctx.run is not None
    stage_merge(ctx.run)


def stage_window_reports(ctx: StepContext) -> None:
    assert ctx.run is not None
    stage_reports(ctx.run)


def stage_merge_commit(ctx: StepContext) -> None:
    """Commit 1, as ``window`` makes it; a PR that waits for a person records so in the ledger."""
    run = ctx.run
    assert run is not None
    ctx.tiers = tier_counts(run.questions)
    files = dict(run.files)
    if ctx.tiers[Tier.DECIDE]:
        ctx.person = True
        ctx.summary = _summary(ctx, "waiting for answers")
        files |= _with_summary(files[LEDGER_PATH], ctx.name, ctx.summary)
    message = merge_message(run.window, run.outcomes, run.questions, run.reports_rel)
    if ctx.tiers[Tier.DECIDE]:  # this commit is the PR's last until a person answers
        ctx.final(message.splitlines()[0])
    run.commits.append(commit_on_branch(ctx, files, f"{message}\n{FOLLOW_TRAILER}\n", run.outcomes))


def _resolve(ctx: StepContext, trusted: dict[str, Any], answers: dict[str, Any], source: str) -> None:
    assert ctx.tx is not None
    report_dir = ctx.worktree / ctx.report_rel
    rr = plan_resolve(ctx.worktree, report_dir, trusted, answers, source, None)
    rr.tx = ctx.tx
    run_stages(ctx.tx, RESOLVE_STAGES, rr)


def open_decide(questions: list[Question]) -> list[str]:
    return [q.id for q in expand_sites(questions) if q.tier == Tier.DECIDE and not q.decision]


def waiting_line(ctx: StepContext, open_ids: list[str]) -> str:
    shown = ", ".join(open_ids[:6]) + (" ..." if len(open_ids) > 6 else "")
    where = ctx.worktree / ctx.report_rel
    return (
        f"#{ctx.pr} needs a person: {len(open_ids)} Decide question(s) open ({shown}); answer them in "
        f"{where}/review.html (save decisions.json there) or in decisions.json, then run follow again"
    )


def stage_auto_resolve(ctx: StepContext) -> None:
    """Resolve with the recorded decisions and the proposed defaults, unless a Decide question is open."""
    run = ctx.run
    assert run is not None
    open_ids = open_decide(run.questions)
    if open_ids:
        ctx.stop = waiting_line(ctx, open_ids)
        return
    rel = f"{ctx.report_rel}/decisions.json"
    trusted = parse_decisions(run.files[rel].decode("utf-8"), rel)
    _resolve(ctx, trusted, trusted, rel)


def stage_answers(ctx: StepContext) -> None:
    """A resumed PR: resolve with the reviewer's decisions.json, or stop again while a Decide is open."""
    p = ctx.pending
    assert p is not None
    rel = f"{ctx.report_rel}/decisions.json"
    trusted = committed_decisions(ctx.worktree, p.first, rel)
    source = ctx.worktree / rel
    answers = load_decisions(source)
    questions = merge_answers(trusted, answers, str(source))
    open_ids = open_decide(questions)
    if open_ids:
        ctx.stop = waiting_line(ctx, open_ids)
        ctx.summary = _summary(ctx, "waiting for answers")
        return
    _resolve(ctx, trusted, answers, str(source))


def stage_gate(ctx: StepContext) -> None:
    """Gate the tree against the one before the PR; commit the verdict and the PR's summary."""
    if ctx.stop:
        return
    why = ""
    if ctx.gate is None:
        why = "follow ran with --no-gate"
    else:
        ctx.gate_result = ctx.gate.judge(ctx.before, "HEAD", ctx.pr)
    result = ctx.gate_result
    files = {f"{ctx.report_rel}/{k}": v for k, v in gate_files(result, ctx.pr, why).items()}
    ctx.summary = _summary(ctx, verdict(result))
    ledger = with_summary(load_ledger(ctx.worktree, "HEAD"), ctx.name, ctx.summary)
    files |= ledger_files(ledger)
    subject = follow_gate_subject(window_label(ctx.pr, ctx.pr), verdict(result))
    ctx.final(subject)
    commit_on_branch(ctx, files, subject + "\n")
    if result is not None and not result.passed:
        ctx.stop = (
            f"#{ctx.pr}: the gate found {len(result.new)} new failure(s) (see {ctx.worktree / ctx.report_rel}/"
            f"GATE.md); fix them on {FOLLOW_BRANCH} in {ctx.worktree} (commit the fix), then run follow again"
        )


NEW_PR_STAGES: list[Stage] = [
    ("follow branch", stage_site),
    ("translate", stage_window_translate),
    ("merge", stage_window_merge),
    ("reports", stage_window_reports),
    ("merge commit", stage_merge_commit),
    ("auto-resolve", stage_auto_resolve),
    ("follow gate", stage_gate),
]
ANSWERS_STAGES: list[Stage] = [("answers", stage_answers), ("follow gate", stage_gate)]
GATE_AGAIN_STAGES: list[Stage] = [("follow gate", stage_gate)]


# --- a PR, new or resumed ------------------------------------------------------------------------


def new_pr(
    tx: Transaction,
    site: FollowSite,
    step: Step,
    cutoff: str,
    upstream: Path,
    translator: Translator,
    gate: StepGate | None,
) -> StepContext:
    """Mirror the next PR: every check and input first, then the stages."""
    window = step_window(upstream, cutoff, step)
    report_rel = report_dir(step.pr, step.pr)
    if git_text(site.downstream, "ls-tree", "--name-only", site.tip, report_rel):
        raise SyncError(
            f"{report_rel} already exists on {FOLLOW_BRANCH} ({site.tip[:10]}): PR #{step.pr} was mirrored "
            "already (merged twice upstream?); remove that folder on the branch (commit) to mirror it again"
        )
    changes = changed_files(upstream, window.cutoff, window.tip)
    checked = site.worktree if site.worktree_exists else site.downstream
    check_clean(checked, changes if site.worktree_exists else [], translator.rules, report_rel)
    ctx = StepContext(site, step.pr, report_rel, site.tip, commit_date(upstream, window.tip), gate, tx=tx)
    ctx.run = WindowRun(
        upstream, site.downstream, window, FOLLOW_BRANCH, site.worktree, report_rel, translator.rules,
        translator.translate_fn, changes, None, site.tip, translator.cache(), Console(quiet=True), tx=tx,
    )  # fmt: skip
    with BlobReader(upstream) as up_blobs, BlobReader(site.downstream) as down_blobs:
        ctx.run.up_read = up_blobs.read
        ctx.run.down = Downstream(
            ls_tree(site.downstream, site.tip), down_blobs.read,
            deleted_paths_in_history(site.downstream, site.tip),
        )  # fmt: skip
        run_stages(tx, NEW_PR_STAGES, ctx)
    return ctx


def _prior_seconds(worktree: Path, pr: int, name: str) -> float:
    for row in load_ledger(worktree, "HEAD"):
        if row.window == name and row.pr == pr and row.follow is not None:
            return row.follow.seconds
    return 0.0


def resume(tx: Transaction, site: FollowSite, pending: Pending, gate: StepGate | None) -> StepContext:
    """Finish the PR at the tip: resolve it with the reviewer's answers, or gate it (again, after a fix)."""
    date = git_text(site.worktree, "show", "-s", "--format=%cd", "--date=raw", pending.first)
    before = git_text(site.worktree, "rev-parse", pending.before)
    ctx = StepContext(site, pending.pr, pending.report_rel, before, date, gate, tx=tx, pending=pending)
    ctx.prior_seconds = _prior_seconds(site.worktree, pending.pr, pending.name)
    asked = committed_decisions(site.worktree, pending.first, f"{pending.report_rel}/decisions.json")
    ctx.tiers = tier_counts([Question.from_dict(q) for q in asked["questions"]])
    ctx.person = True
    run_stages(tx, ANSWERS_STAGES if pending.resolved is None else GATE_AGAIN_STAGES, ctx)
    return ctx
