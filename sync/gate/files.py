"""Which files of a worktree the gate looks at, and reading them safely."""

from __future__ import annotations

import fnmatch
from pathlib import Path

from sync.gitio import GitError, git

_SKIP_DIRS = {".git", ".venv", "__pycache__", "node_modules", ".pytest_cache", ".ruff_cache"}


def worktree_files(worktree: Path, exclude: list[str] | None = None) -> list[str]:
    """Tracked files (``git ls-files``) of a git worktree, else every file; minus ``exclude`` globs.

    Tracked files are what the merge will commit, so untracked scratch files never fail a gate.
    """
    exclude = exclude or []
    try:
        listed = git(worktree, "ls-files", "-z", "--cached").decode("utf-8", "surrogateescape")
        paths = [p for p in listed.split("\0") if p]
    except (GitError, FileNotFoundError):
        paths = [
            p.relative_to(worktree).as_posix()
            for p in worktree.rglob("*")
            if p.is_file() and not _SKIP_DIRS.intersection(p.relative_to(worktree).parts)
        ]
    kept = [p for p in paths if not any(fnmatch.fnmatchcase(p, pattern) for pattern in exclude)]
    return sorted(p for p in kept if (worktree / p).is_file())
