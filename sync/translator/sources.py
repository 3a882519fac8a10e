"""Where upstream files come from: a directory, or every blob of a git revision (no checkout)."""

from __future__ import annotations

import subprocess
from pathlib import Path


class SourceError(Exception):
    """The upstream source cannot be read; the message says which and how to fix it."""


def read_directory(src: Path) -> list[tuple[str, bytes]]:
    return [
        (path.relative_to(src).as_posix(), path.read_bytes())
        for path in sorted(src.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(src).parts
    ]


def read_git_tree(repo: Path, rev: str) -> list[tuple[str, bytes]]:
    """Every blob of ``rev`` (no checkout, the repository is left as it is)."""
    listing = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "-z", "--full-tree", rev],
        capture_output=True,
        check=False,
    )
    if listing.returncode != 0:
        reason = listing.stderr.decode().strip().splitlines()[-1:] or ["not a git repository"]
        raise SourceError(
            f"{repo}: cannot read revision {rev!r} ({reason[0]}); pass a commit of that repository"
        )
    entries = []
    for record in listing.stdout.split(b"\0"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        mode, kind, sha = meta.split()
        if kind == b"blob" and mode != b"120000":
            entries.append((name.decode("utf-8", "surrogateescape"), sha.decode()))
    batch = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch"],
        input=b"".join(sha.encode() + b"\n" for _, sha in entries),
        capture_output=True,
        check=True,
    ).stdout
    files, offset = [], 0
    for name, _ in entries:
        header_end = batch.index(b"\n", offset)
        size = int(batch[offset:header_end].split()[2])
        start = header_end + 1
        files.append((name, batch[start : start + size]))
        offset = start + size + 1
    return files
