"""The sync branch and its separate worktree: the user's own checkout is never modified."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from sync.window.errors import SyncError
from sync.window.filemerge import FileOutcome
from sync.window.gitio import FIXED_IDENTITY, GitError, git, git_text


def branch_name(from_pr: int, to_pr: int) -> str:
    return f"sync/slime-{from_pr}-{to_pr}"


def default_worktree_path(downstream: Path, from_pr: int, to_pr: int) -> Path:
    """A sibling of the downstream checkout: ``<parent>/<name>-sync-<from>-<to>``."""
    downstream = downstream.resolve()
    return downstream.parent / f"{downstream.name}-sync-{from_pr}-{to_pr}"


def branch_exists(repo: Path, branch: str) -> bool:
    try:
        git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
        return True
    except GitError:
        return False


def create_worktree(downstream: Path, branch: str, path: Path, start: str) -> None:
    """New branch ``branch`` at ``start``, checked out in a new worktree at ``path``."""
    git(downstream, "worktree", "add", "--quiet", "-b", branch, str(path), start)


def remove_worktree(downstream: Path, branch: str, path: Path) -> None:
    """Undo ``create_worktree`` after a failure (only ever called on what this run created)."""
    try:
        git(downstream, "worktree", "remove", "--force", str(path))
    except GitError:
        shutil.rmtree(path, ignore_errors=True)
        git(downstream, "worktree", "prune")
    with contextlib.suppress(GitError):
        git(downstream, "branch", "-D", branch)


def inside(worktree: Path, rel: str) -> Path:
    """``worktree / rel``, refusing a path that leaves the worktree (``..``, or a symlinked folder on the way)."""
    target = worktree / rel
    root, parent = worktree.resolve(), target.parent.resolve()
    if parent != root and root not in parent.parents:
        raise SyncError(
            f"{rel} leads outside the worktree {worktree} (a symlinked folder or '..'); remove the link and run again"
        )
    return target


def write_outcomes(worktree: Path, outcomes: list[FileOutcome]) -> list[str]:
    """Apply every outcome's removals and contents to the worktree; return the paths touched."""
    touched: list[str] = []
    for out in outcomes:
        for old in out.remove:
            target = inside(worktree, old)
            if target.is_file() or target.is_symlink():
                target.unlink()
            touched.append(old)
        if out.data is not None and out.outcome != "not_mirrored":
            target = inside(worktree, out.path)
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink():
                target.unlink()
            target.write_bytes(out.data)
            os.chmod(target, 0o755 if out.mode == "100755" else 0o644)
            touched.append(out.path)
    return touched


def write_files(worktree: Path, files: dict[str, bytes]) -> list[str]:
    """Write report and state files (relative path -> bytes) into the worktree."""
    for rel, data in files.items():
        target = inside(worktree, rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return list(files)


def identity_env(repo: Path) -> dict[str, str]:
    """The repository's configured author, else a fixed vime-sync identity (so commits always work)."""
    env: dict[str, str] = {}
    for key, var in (("user.name", "NAME"), ("user.email", "EMAIL")):
        try:
            value = git_text(repo, "config", key)
        except GitError:
            value = ""
        if not value:
            env[f"GIT_AUTHOR_{var}"] = FIXED_IDENTITY[f"GIT_AUTHOR_{var}"]
            env[f"GIT_COMMITTER_{var}"] = FIXED_IDENTITY[f"GIT_COMMITTER_{var}"]
    return env


def commit_paths(worktree: Path, paths: list[str], message: str, date: str) -> str:
    """Stage exactly ``paths`` (even if ignored) and commit with a fixed date; return the commit id."""
    tracked = set(git(worktree, "ls-files", "-z").decode("utf-8", "surrogateescape").split("\0"))
    paths = [p for p in paths if p in tracked or (worktree / p).exists() or (worktree / p).is_symlink()]
    if paths:
        listing = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in sorted(set(paths)))
        git(worktree, "add", "-A", "-f", "--pathspec-from-file=-", "--pathspec-file-nul", input=listing)
    env = {**identity_env(worktree), "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    git(
        worktree, "-c", "commit.gpgsign=false", "commit", "--quiet", "--no-verify", "--allow-empty",
        "-F", "-", input=message.encode(), env=env,
    )  # fmt: skip
    return git_text(worktree, "rev-parse", "HEAD")
