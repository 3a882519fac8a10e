"""The branch ``vime-sync follow`` commits to, and the window its tip holds.

Its own small module so that ``resolve``, ``status`` and ``gate`` find a pending PR's report folder
on the follow branch (named by the state file at its tip) as they do on a window's own branch
(named ``sync/slime-<from>-<to>``), without importing the follow machinery above them.
"""

from __future__ import annotations

from pathlib import Path

from sync.model.names import FOLLOW_BRANCH, FOLLOW_TRAILER, window_name, window_name_of_branch
from sync.window.state import read_state

__all__ = ["FOLLOW_BRANCH", "FOLLOW_TRAILER", "window_name_of"]


def window_name_of(worktree: Path, branch: str) -> str | None:
    """``slime-<from>-<to>`` of the window a sync branch holds: from a window branch's name, or for the
    follow branch from the state file at its tip (the last PR it took); None on any other branch."""
    name = window_name_of_branch(branch)
    if name is not None:
        return name
    if branch != FOLLOW_BRANCH:
        return None
    try:
        state = read_state(worktree, "HEAD")
    except ValueError:
        return None
    if state is None or state.from_pr is None:
        return None
    return window_name(state.from_pr, state.last_pr)
