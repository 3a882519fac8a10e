"""The upstream changes a window carries: one record per changed file, renames followed (``git diff -M``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sync.gitio import git

NULL_OID = "0" * 40


@dataclass(frozen=True)
class UpstreamChange:
    """A file the window changes upstream. status: A added, M modified, D deleted, R renamed (maybe edited)."""

    status: str
    old_path: str | None
    new_path: str | None
    base_oid: str | None
    theirs_oid: str | None
    old_mode: str
    new_mode: str

    @property
    def path(self) -> str:
        """The upstream path that names this change (the new path, or the old one for a deletion)."""
        return self.new_path or self.old_path or ""


def changed_files(upstream: Path, cutoff: str, tip: str) -> list[UpstreamChange]:
    """Every file changed between cutoff and tip, sorted by path; copies count as additions."""
    out = git(upstream, "diff", "--raw", "-z", "-M", "--no-abbrev", cutoff, tip)
    fields = out.split(b"\0")
    changes: list[UpstreamChange] = []
    i = 0
    while i < len(fields) - 1:
        meta = fields[i].decode()
        i += 1
        if not meta.startswith(":"):
            continue
        old_mode, new_mode, old_oid, new_oid, status = meta[1:].split()
        letter = status[0]
        p1 = fields[i].decode("utf-8", "surrogateescape")
        i += 1
        p2 = None
        if letter in "RC":
            p2 = fields[i].decode("utf-8", "surrogateescape")
            i += 1
        base = None if old_oid == NULL_OID else old_oid
        theirs = None if new_oid == NULL_OID else new_oid
        if letter == "R":
            changes.append(UpstreamChange("R", p1, p2, base, theirs, old_mode, new_mode))
        elif letter == "C":
            changes.append(UpstreamChange("A", None, p2, None, theirs, "000000", new_mode))
        elif letter == "A":
            changes.append(UpstreamChange("A", None, p1, None, theirs, old_mode, new_mode))
        elif letter == "D":
            changes.append(UpstreamChange("D", p1, None, base, None, old_mode, new_mode))
        else:  # M, T (type change)
            changes.append(UpstreamChange("M", p1, p1, base, theirs, old_mode, new_mode))
    return sorted(changes, key=lambda c: c.path)
