"""What a window run produces (``WindowResult``) and the report files of commit 1.

Its own module so that ``run`` (the whole window) and ``perpr`` (one commit per PR) both import
it downward, with no import cycle between them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sync.decisions import load_recorded
from sync.ledger import load_ledger
from sync.merge.filemerge import FileOutcome
from sync.merge.whitespace import matcher
from sync.reports import ReportContext, build_reports
from sync.reports.questions import Question, build_questions
from sync.reports.review_config import load_review_config
from sync.window.history import Window
from sync.window.state import STATE_PATH, SyncState

if TYPE_CHECKING:
    from sync.rules import RuleSet
    from sync.window.provenance import WindowProvenance


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
    timings: dict[str, float] = field(default_factory=dict)  # wall seconds per stage, in order


def state_for(window: Window, rules: RuleSet) -> SyncState:
    return SyncState(window.tip, window.to_pr, rules.hash, window.from_pr)


def reports_for(
    window: Window,
    branch: str,
    outcomes: list[FileOutcome],
    downstream: Path,
    head: str,
    state: SyncState,
    rules: RuleSet | None = None,
    provenance: WindowProvenance | None = None,
    downstream_commits: dict[str, str] | None = None,
    timings: dict[str, float] | None = None,
) -> tuple[list[Question], dict[str, bytes]]:
    """Questions (with recorded decisions applied as Settled, and the tiers ``.vime-sync/review.toml``
    committed at ``head`` sets) and every file commit 1 adds besides merges.

    ``provenance`` (sync.window.provenance) names the PRs behind each hunk and site; the ledger rows of
    the window join those committed at ``head``, with ``downstream_commits`` (per-PR commits) when known;
    ``timings`` (stage seconds so far) go into SUMMARY.md when given.
    """
    recorded = load_recorded(downstream, head)
    ctx = ReportContext(window, branch, outcomes, previous_ledger=load_ledger(downstream, head))
    ctx.provenance, ctx.downstream_commits, ctx.timings = provenance, downstream_commits or {}, timings
    ctx.questions = build_questions(
        outcomes, ctx.prs_for, recorded.get, provenance, ctx.order, whitespace_kind=matcher(rules),
        review=load_review_config(downstream, head),
    )  # fmt: skip
    files = build_reports(ctx)
    files[STATE_PATH] = state.to_toml().encode()
    return ctx.questions, files
