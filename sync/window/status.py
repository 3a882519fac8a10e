"""``status``: where a sync branch stands (questions by tier and answered, markers left, gate result)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sync.reports.questions import TIERS
from sync.window.gitio import git_text
from sync.window.resolve import find_report_dir, load_decisions, markers_left


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
        tiers[q["tier"]] += 1
    open_decide = [q["id"] for q in doc["questions"] if q["tier"] == "Decide" and not q.get("decision")]
    gate_file = report_dir / "gate.json"
    gate = json.loads(gate_file.read_text()) if gate_file.exists() else None
    subjects = git_text(worktree, "log", "--format=%s", "-n", "200").splitlines()
    mine = [s for s in subjects if s.startswith("sync(")]
    return SyncStatus(
        branch=git_text(worktree, "rev-parse", "--abbrev-ref", "HEAD"),
        report_dir=report_dir,
        tiers=tiers,
        unanswered_decide=open_decide,
        markers=markers_left(worktree, doc),
        resolved=any(s.endswith(": resolve") for s in mine),
        gate=gate,
        commits=mine,
    )
