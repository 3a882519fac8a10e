"""``status``: where a sync branch stands (questions by tier and answered, markers left, gate result)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sync.gitio import GitError, git, git_text
from sync.model.errors import SyncError
from sync.model.names import SUBJECT_PREFIX
from sync.model.outcome import Outcome
from sync.model.question import TIERS, Tier
from sync.window.decisions_doc import committed_decisions, merge_answers
from sync.window.resolve import find_report_dir, load_decisions, markers_left, window_commits
from sync.window.transaction import check_killed_run


@dataclass
class SyncStatus:
    branch: str
    report_dir: Path
    tiers: dict[str, int]
    unanswered_decide: list[str]
    markers: dict[str, int]
    resolved: bool
    gate: dict[str, Any] | None
    commits: list[str] = field(default_factory=list)
    # files the line merge conflicted in, settled per top-level statement: what each side changed
    settled: dict[str, str] = field(default_factory=dict)


def sync_status(worktree: Path) -> SyncStatus:
    worktree = Path(worktree).resolve()
    check_killed_run(worktree)  # a half-made branch: the way out, not a report on it
    report_dir = find_report_dir(worktree)
    worktree = report_dir.parents[1]
    first, resolve_commit = window_commits(worktree, report_dir.name)
    rel = report_dir.relative_to(worktree).as_posix()
    doc = committed_decisions(
        worktree, resolve_commit or first, f"{rel}/decisions.json"
    )  # the questions asked
    answers = load_decisions(report_dir / "decisions.json")  # the reviewer's answers so far
    questions = merge_answers(doc, answers, str(report_dir / "decisions.json"))
    tiers = dict.fromkeys(TIERS, 0)
    for q in questions:
        tiers[q.tier] = tiers.get(q.tier, 0) + 1
    open_decide = [q.id for q in questions if q.tier == Tier.DECIDE and not q.decision]
    gate_file = report_dir / "gate.json"
    try:
        gate = (
            json.loads(gate_file.read_text(encoding="utf-8"))
            if _gate_of_this_run(worktree, first, rel)
            else None
        )
    except ValueError:
        raise SyncError(f"{gate_file} is not valid JSON; run `vime-sync gate` again to rewrite it") from None
    if gate is not None and not isinstance(gate, dict):
        raise SyncError(f"{gate_file} is not a gate report; run `vime-sync gate` again to rewrite it")
    mine = git_text(
        worktree, "log", "--format=%s", f"{first}~1..HEAD" if _has_parent(worktree, first) else first
    )
    return SyncStatus(
        branch=git_text(worktree, "rev-parse", "--abbrev-ref", "HEAD"),
        report_dir=report_dir,
        tiers=tiers,
        unanswered_decide=open_decide,
        markers=markers_left(worktree, doc),
        resolved=resolve_commit is not None,
        gate=gate,
        commits=[s for s in mine.splitlines() if s.startswith(SUBJECT_PREFIX)],
        settled={
            p: f.get("settled", "") for p, f in doc["files"].items() if f.get("outcome") == Outcome.STRUCTURAL
        },
    )


def _gate_of_this_run(worktree: Path, first: str, rel: str) -> bool:
    """A gate.json written after this window's commit 1: not the one commit 1 carried from an earlier run
    of the same window (merged into main, then run again)."""
    gate_file = worktree / rel / "gate.json"
    if not gate_file.is_file():
        return False
    try:
        before = git(worktree, "show", f"{first}:{rel}/gate.json")
    except GitError:
        return True
    return gate_file.read_bytes() != before or bool(
        git_text(worktree, "log", "--format=%H", f"{first}..HEAD", "--", f"{rel}/gate.json")
    )


def _has_parent(repo: Path, commit: str) -> bool:
    return bool(git_text(repo, "rev-list", "--parents", "-n", "1", commit).split()[1:])
