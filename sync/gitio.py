"""Thin, deterministic wrappers over git plumbing: every stage of a sync talks to git through here, and
nothing else of ``sync`` runs git (``tests/test_import_graph.py`` checks both).

Why plumbing and not a Python git library: the same commands a reviewer would type, no extra
dependency, and ``cat-file --batch`` keeps blob reads to one process per repository.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

FIXED_IDENTITY = {
    "GIT_AUTHOR_NAME": "vime-sync",
    "GIT_AUTHOR_EMAIL": "vime-sync@localhost",
    "GIT_COMMITTER_NAME": "vime-sync",
    "GIT_COMMITTER_EMAIL": "vime-sync@localhost",
}


class GitError(RuntimeError):
    """A git command failed; the message is one line naming the command and git's complaint."""


def git(repo: Path, *args: str, input: bytes | None = None, env: dict[str, str] | None = None) -> bytes:
    """Run ``git -C repo args`` and return stdout as bytes; raise GitError with git's first error line."""
    full_env = None
    if env:
        full_env = {**os.environ, **env}
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], input=input, capture_output=True, env=full_env, check=False
    )
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        first = err[0] if err else f"exit status {proc.returncode}"
        raise GitError(f"git {' '.join(args[:3])}: {first}")
    return proc.stdout


@dataclass(frozen=True)
class GitRun:
    """A git command's exit status and output, for callers to whom a failure is an answer."""

    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def last_error_line(self, default: str) -> str:
        lines = self.stderr.decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else default


def git_run(
    repo: Path | None, *args: str, input: bytes | None = None, env: dict[str, str] | None = None
) -> GitRun:
    """Run ``git [-C repo] args`` without raising on a non-zero exit (``repo`` None: no repository,
    e.g. ``merge-file``); ``env`` replaces the environment as given."""
    command = ["git", *(["-C", str(repo)] if repo is not None else []), *args]
    proc = subprocess.run(command, input=input, capture_output=True, env=env, check=False)
    return GitRun(proc.returncode, proc.stdout, proc.stderr)


def git_text(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run git and return stdout decoded as UTF-8 without the trailing newline."""
    return git(repo, *args, env=env).decode("utf-8", "replace").rstrip("\n")


def is_git_repo(path: Path) -> bool:
    """True when ``path`` is inside a git repository (bare or not)."""
    if not path.exists():
        return False
    proc = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--git-dir"], capture_output=True, check=False
    )
    return proc.returncode == 0


def is_ancestor(repo: Path, older: str, newer: str) -> bool:
    """Whether ``older`` is in the history of ``newer`` (git's own answer; no error for unknown ids)."""
    return git_run(repo, "merge-base", "--is-ancestor", older, newer).ok


def blob_at(repo: Path, commit: str, path: str) -> str | None:
    """The blob id of ``path`` at ``commit``, or None when the path is absent there."""
    run = git_run(repo, "rev-parse", "--verify", "--quiet", f"{commit}:{path}")
    return run.stdout.decode().strip() or None if run.ok else None


def blob_ids(repo: Path, specs: list[tuple[str, str]]) -> dict[tuple[str, str], str | None]:
    """The blob id of each (commit, path), None where absent or not a blob: one ``git cat-file
    --batch-check`` for all of them. Paths with a newline (which the batch input cannot carry) are
    left out of the answer: ``blob_at`` reads those."""
    plain = [s for s in dict.fromkeys(specs) if "\n" not in s[1]]
    if not plain:
        return {}
    text = "".join(f"{commit}:{path}\n" for commit, path in plain).encode("utf-8", "surrogateescape")
    out = git(repo, "cat-file", "--batch-check=%(objectname) %(objecttype)", input=text)
    found: dict[tuple[str, str], str | None] = {}
    for spec, line in zip(plain, out.decode("utf-8", "surrogateescape").splitlines(), strict=True):
        oid, _, kind = line.partition(" ")
        found[spec] = oid if kind == "blob" else None
    return found


def export_tree(repo: Path, rev: str, dest: Path, paths: list[str] | None = None) -> None:
    """``rev``'s files (all, or just ``paths``) written under ``dest`` by ``git archive`` (no worktree,
    no hooks, the repository untouched)."""
    archive = git(repo, "archive", "--format=tar", rev, *(["--", *paths] if paths else []))
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)


def rev_parse(repo: Path, rev: str) -> str | None:
    """Full commit id of ``rev``, or None when it does not name a commit."""
    proc = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def ls_tree(repo: Path, commit: str) -> dict[str, tuple[str, str]]:
    """Map every file path in ``commit`` to (mode, blob id)."""
    out = git(repo, "ls-tree", "-r", "-z", "--full-tree", commit)
    entries: dict[str, tuple[str, str]] = {}
    for rec in out.split(b"\0"):
        if not rec:
            continue
        meta, path = rec.split(b"\t", 1)
        mode, kind, oid = meta.decode().split()
        if kind == "blob":
            entries[path.decode("utf-8", "surrogateescape")] = (mode, oid)
    return entries


class BlobReader:
    """Reads many blobs through one ``git cat-file --batch`` process (fast for hundreds of files)."""

    def __init__(self, repo: Path) -> None:
        self._proc = subprocess.Popen(
            ["git", "-C", str(repo), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def read(self, oid: str) -> bytes:
        """Content of blob ``oid``."""
        assert self._proc.stdin and self._proc.stdout
        self._proc.stdin.write(oid.encode() + b"\n")
        self._proc.stdin.flush()
        header = self._proc.stdout.readline().split()
        if len(header) < 3:
            raise GitError(f"git cat-file: blob {oid} is missing")
        size = int(header[2])
        data = self._proc.stdout.read(size)
        self._proc.stdout.read(1)
        return data

    def close(self, abort: bool = False) -> None:
        """End the ``cat-file`` child: EOF on its input normally, killed when the run is aborting."""
        if abort:
            self._proc.kill()
        if self._proc.stdin:
            with contextlib.suppress(BrokenPipeError):
                self._proc.stdin.close()
        self._proc.wait()
        if self._proc.stdout:
            self._proc.stdout.close()

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(abort=exc_type is not None)


def dirty_paths(repo: Path) -> set[str]:
    """Paths with uncommitted changes (staged, unstaged or untracked) in a work tree."""
    out = git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    paths: set[str] = set()
    records = out.split(b"\0")
    i = 0
    while i < len(records):
        rec = records[i]
        i += 1
        if len(rec) < 4:
            continue
        status, path = rec[:2].decode(), rec[3:].decode("utf-8", "surrogateescape")
        paths.add(path)
        if status[0] in "RC":  # renames carry the old path as the next record
            paths.add(records[i].decode("utf-8", "surrogateescape"))
            i += 1
    return paths


def deleted_paths_in_history(repo: Path, rev: str) -> set[str]:
    """Every path ever deleted in the history of ``rev``: tells 'the downstream removed it' from 'never had it'."""
    out = git(repo, "log", "--format=", "--name-only", "--diff-filter=D", "-z", rev)
    return {p.decode("utf-8", "surrogateescape").strip("\n") for p in out.split(b"\0") if p.strip(b"\n")}


def commit_date(repo: Path, commit: str) -> str:
    """Committer date of ``commit`` in git's raw format (used to date sync commits deterministically)."""
    return git_text(repo, "show", "-s", "--format=%cd", "--date=raw", commit)
