"""A followed PR that is not finished: its commit 1 waits for answers, or its gate failed.

Read from the follow branch's tip: the state file names the last PR's window, its commit 1 (which
carries follow's trailer; a window merged into the branch is finished by definition), its resolve
commit, and the follow gate's verdict committed in its report folder.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sync.gitio import GitError, git, git_text
from sync.model.errors import SyncError
from sync.model.names import FOLLOW_TRAILER, report_dir, window_name
from sync.window.resolve import window_commits
from sync.window.state import read_state


@dataclass(frozen=True)
class Pending:
    """The unfinished PR at the tip: resolved is None while it waits for answers."""

    pr: int
    name: str
    report_rel: str
    first: str  # its commit 1
    resolved: str | None
    gate: dict[str, Any] | None

    @property
    def before(self) -> str:
        """The follow branch before this PR: its commit 1's parent."""
        return f"{self.first}^"


def committed_json(repo: Path, rev: str, rel: str) -> dict[str, Any] | None:
    try:
        data = json.loads(git(repo, "show", f"{rev}:{rel}").decode("utf-8"))
    except (GitError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def gate_done(gate: dict[str, Any] | None) -> bool:
    return gate is not None and gate.get("mode") == "follow" and bool(gate.get("passed"))


def pending_at(worktree: Path) -> Pending | None:
    """The unfinished followed PR at the tip of the follow branch checked out in ``worktree``: one is
    finished when follow committed its own gate verdict (passed, or not run under --no-gate)."""
    try:
        state = read_state(worktree, "HEAD")
    except ValueError as exc:
        raise SyncError(str(exc)) from None
    if state is None or state.from_pr is None or state.from_pr != state.last_pr:
        return None
    name = window_name(state.from_pr, state.last_pr)
    try:
        first, resolved = window_commits(worktree, name)
    except SyncError:
        return None
    if FOLLOW_TRAILER not in git_text(worktree, "show", "-s", "--format=%B", first):
        return None
    rel = report_dir(state.from_pr, state.last_pr)
    gate = committed_json(worktree, "HEAD", f"{rel}/gate.json")
    if resolved is not None and gate_done(gate):
        return None
    return Pending(state.last_pr, name, rel, first, resolved, gate)
