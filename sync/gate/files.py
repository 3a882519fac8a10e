"""Which files of a worktree the gate looks at, and reading them safely."""

from __future__ import annotations

import fnmatch
import subprocess
from pathlib import Path

_SKIP_DIRS = {".git", ".venv", "__pycache__", "node_modules", ".pytest_cache", ".ruff_cache"}


def worktree_files(worktree: Path, exclude: list[str] | None = None) -> list[str]:
    """Tracked files (``git ls-files``) of a git worktree, else every file; minus ``exclude`` globs.

    Tracked files are what the merge will commit, so untracked scratch files never fail a gate.
    """
    exclude = exclude or []
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached"],
            cwd=worktree,
            check=True,
            capture_output=True,
        ).stdout.decode("utf-8", "surrogateescape")
        paths = [p for p in listed.split("\0") if p]
    except (subprocess.CalledProcessError, FileNotFoundError):
        paths = [
            p.relative_to(worktree).as_posix()
            for p in worktree.rglob("*")
            if p.is_file() and not _SKIP_DIRS.intersection(p.relative_to(worktree).parts)
        ]
    kept = [p for p in paths if not any(fnmatch.fnmatchcase(p, pattern) for pattern in exclude)]
    return sorted(p for p in kept if (worktree / p).is_file())


def read_text(path: Path) -> str | None:
    """The file as text, or None for a binary file (a NUL byte in its first 8 KiB)."""
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")
