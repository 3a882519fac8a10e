"""The sync branch and its separate worktree: the user's own checkout is never modified."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from sync.gitio import FIXED_IDENTITY, GitError, git, git_text
from sync.merge.filemerge import FileOutcome
from sync.model.errors import SyncError
from sync.model.outcome import Outcome


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


def inside(worktree: Path, rel: str) -> Path:
    """``worktree / rel``, refusing a path that leaves the worktree (``..``, or a symlinked folder on the way)."""
    target = worktree / rel
    root, parent = worktree.resolve(), target.parent.resolve()
    if parent != root and root not in parent.parents:
        raise SyncError(
            f"{rel} leads outside the worktree {worktree} (a symlinked folder or '..'); remove the link and run again"
        )
    return target


@contextlib.contextmanager
def _fits(rel: str, upstream: str | None = None) -> Iterator[None]:
    """A write that meets a file where a folder is needed (or the reverse) as one line naming the paths."""
    try:
        yield
    except (FileExistsError, NotADirectoryError, IsADirectoryError) as exc:
        source = f" (from {upstream})" if upstream and upstream != rel else ""
        raise SyncError(
            f"cannot write {rel}{source}: {exc.strerror.lower()} on the way; a file stands where a folder is "
            "needed, or the reverse: rename it downstream, or map the upstream path elsewhere in "
            "translations/layout.toml"
        ) from None


def write_outcomes(worktree: Path, outcomes: list[FileOutcome]) -> list[str]:
    """Apply every outcome's removals and contents to the worktree; return the paths touched."""
    touched: list[str] = []
    for out in outcomes:
        for old in out.remove:
            target = inside(worktree, old)
            if target.is_file() or target.is_symlink():
                target.unlink()
            touched.append(old)
        if out.data is not None and out.outcome != Outcome.NOT_MIRRORED:
            target = inside(worktree, out.path)
            with _fits(out.path, out.upstream_path):
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
        with _fits(rel):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return list(files)


def clear_stale(worktree: Path, folder: str, keep: dict[str, bytes]) -> list[str]:
    """Remove the files in ``folder`` that ``keep`` does not list (what an earlier run of the same
    window left in its report folder: a gate.json from another run must not look like this one's)."""
    root = inside(worktree, f"{folder}/x").parent
    if not root.is_dir():
        return []
    stale = sorted(
        p.relative_to(worktree).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink()
    )
    stale = [rel for rel in stale if rel not in keep]
    for rel in stale:
        (worktree / rel).unlink()
    for d in sorted((p for p in root.rglob("*") if p.is_dir()), reverse=True):
        with contextlib.suppress(OSError):
            d.rmdir()
    return stale


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
