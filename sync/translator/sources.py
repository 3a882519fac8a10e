"""Where upstream files come from: a directory, or every blob of a git revision (no checkout)."""

from __future__ import annotations

import os
from pathlib import Path

from sync.gitio import BlobReader, git_run


class SourceError(Exception):
    """The upstream source cannot be read; the message says which and how to fix it."""


def read_directory(src: Path, skipped: list[str] | None = None) -> list[tuple[str, bytes]]:
    """Every regular file under ``src`` (``.git`` left out). Symlinks are not followed nor read, as
    ``read_git_tree`` skips them: one that leaves ``src`` would bring in a file from elsewhere on
    the machine. Each skipped link is appended to ``skipped`` as ``path -> target (why)``."""
    root = src.resolve()
    files: list[tuple[str, bytes]] = []
    for folder, dirs, names in os.walk(src, followlinks=False):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if d != ".git" and not _skip_link(src, here / d, root, skipped))
        for name in sorted(names):
            path = here / name
            if _skip_link(src, path, root, skipped) or not path.is_file():
                continue  # a link, or not a regular file (a FIFO would block the read)
            rel = path.relative_to(src).as_posix()
            try:
                files.append((rel, path.read_bytes()))
            except OSError as exc:
                why = "permission denied" if isinstance(exc, PermissionError) else (exc.strerror or str(exc))
                raise SourceError(
                    f"{rel} cannot be read ({why}); give your user read access to it, or remove it from {src}"
                ) from None
    return sorted(files)


def _skip_link(src: Path, path: Path, root: Path, skipped: list[str] | None) -> bool:
    if not path.is_symlink():
        return False
    if skipped is not None:
        target = os.readlink(path)
        resolved = path.resolve()
        where = (
            "inside the source" if resolved == root or root in resolved.parents else "leaves the source tree"
        )
        skipped.append(f"{path.relative_to(src).as_posix()} -> {target} (symlink, {where})")
    return True


def read_git_tree(repo: Path, rev: str) -> list[tuple[str, bytes]]:
    """Every blob of ``rev`` (no checkout, the repository is left as it is)."""
    listing = git_run(repo, "ls-tree", "-r", "-z", "--full-tree", rev)
    if not listing.ok:
        reason = listing.last_error_line("not a git repository")
        raise SourceError(
            f"{repo}: cannot read revision {rev!r} ({reason}); pass a commit of that repository"
        )
    entries = []
    for record in listing.stdout.split(b"\0"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        mode, kind, sha = meta.split()
        if kind == b"blob" and mode != b"120000":
            entries.append((name.decode("utf-8", "surrogateescape"), sha.decode()))
    with BlobReader(repo) as blobs:
        return [(name, blobs.read(sha)) for name, sha in entries]
