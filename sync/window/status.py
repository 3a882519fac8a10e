"""``status``: where a sync branch stands (questions by tier and answered, markers left, gate result)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sync.reports.questions import TIERS
from sync.window.errors import SyncError
from sync.window.gitio import git_text
from sync.window.resolve import find_report_dir, load_decisions, markers_left, window_commits


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


def sync_status(worktree: Path) -> SyncStatus:
    worktree = Path(worktree).resolve()
    report_dir = find_report_dir(worktree)
    doc = load_decisions(report_dir / "decisions.json")
    tiers = dict.fromkeys(TIERS, 0)
    for q in doc["questions"]:
        tiers[q["tier"]] = tiers.get(q["tier"], 0) + 1
    open_decide = [q["id"] for q in doc["questions"] if q["tier"] == "Decide" and not q.get("decision")]
    gate_file = report_dir / "gate.json"
    try:
        gate = json.loads(gate_file.read_text(encoding="utf-8")) if gate_file.exists() else None
    except ValueError:
        raise SyncError(f"{gate_file} is not valid JSON; run `vime-sync gate` again to rewrite it") from None
    if gate is not None and not isinstance(gate, dict):
        raise SyncError(f"{gate_file} is not a gate report; run `vime-sync gate` again to rewrite it")
    first, resolve_commit = window_commits(worktree, report_dir.name)
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
        commits=[s for s in mine.splitlines() if s.startswith("sync")],
    )


def _has_parent(repo: Path, commit: str) -> bool:
    return bool(git_text(repo, "rev-list", "--parents", "-n", "1", commit).split()[1:])
