"""Helpers of the fault-injection tests: what a sync may not change in a downstream, and which child
processes of a test are still alive."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from window_helpers import git


def _files(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if rel == ".git" or (rel.startswith(".git/") and not rel.startswith(".git/vime-sync-cache")):
            continue
        if p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def snapshot(repo: Path) -> dict[str, object]:
    """Everything of the downstream a run may not change (the lock file in .git is allowed)."""
    return {
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "head": git(repo, "symbolic-ref", "HEAD"),
        "worktrees": git(repo, "worktree", "list", "--porcelain"),
        "index": git(repo, "ls-files", "-s"),
        "status": git(repo, "status", "--porcelain=v1", "--untracked-files=all", "--ignored"),
        "stash": git(repo, "stash", "list"),
        "files": _files(repo),
        "siblings": sorted(p.name for p in repo.parent.iterdir()),
    }


def _all_children() -> list[str]:
    """Live (non-zombie) child processes of this test process."""
    me, found = os.getpid(), []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            found.append(stat.parent.name)
    return found


# Children the test session already had before the current test (session-scoped engines, Ray, the
# router): in a whole-suite run they are alive throughout and are not the sync's to end.
_BASELINE: set[str] = set()


def record_baseline() -> None:
    """Remember this process's live children, so that ``children()`` reports only newer ones."""
    _BASELINE.clear()
    _BASELINE.update(_all_children())


def children() -> list[str]:
    """Live (non-zombie) child processes started since ``record_baseline()`` (all, if never called)."""
    return [pid for pid in _all_children() if pid not in _BASELINE]


def group_alive(pgid: int) -> list[str]:
    """Live (non-zombie) processes of process group ``pgid`` (a CLI run started in its own session)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(stat.parent.name)
    return found
