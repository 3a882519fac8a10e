"""Each upstream file the range touched, with its blob after every first-parent commit that touched it.

A file renamed across the range (``git diff -M`` from the cutoff to the end) is one lineage with
both paths; a path added and deleted inside the range is a lineage of its own. Blob ids come from
one ``git cat-file --batch-check`` process for the whole range.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sync.gitio import blob_ids
from sync.window.changes import changed_files
from sync.window.history import UpstreamCommit

PR = int | str


def label(c: UpstreamCommit) -> PR:
    """A commit's PR number, or the short sha of a direct push (as the reports name it)."""
    return c.pr if c.pr is not None else c.sha[:8]


@dataclass
class Lineage:
    """One upstream file across the range."""

    paths: tuple[str, ...]  # newest name first (a rename: new, old)
    first: tuple[str, str] | None = None  # (path, blob) at the cutoff, or None when absent there
    steps: list[tuple[UpstreamCommit, str | None, str | None]] = field(
        default_factory=list
    )  # (commit, path, blob)

    @property
    def last_path(self) -> str:
        """The newest path the file had (at the end, or before it was deleted)."""
        for _c, path, oid in reversed(self.steps):
            if oid is not None and path is not None:
                return path
        return self.first[0] if self.first else self.paths[0]

    @property
    def exists_at_end(self) -> bool:
        return bool(self.steps[-1][2]) if self.steps else self.first is not None


def lineages(upstream: Path, cutoff: str, end: str, commits: list[UpstreamCommit]) -> list[Lineage]:
    """Every file a commit of ``commits`` (cutoff..end, with files) touched, with its versions."""
    renamed = {c.old_path: c.new_path for c in changed_files(upstream, cutoff, end) if c.status == "R"}
    touched = sorted({p for c in commits for p in c.files})
    by_path: dict[str, Lineage] = {}
    for path in touched:
        if path in renamed and renamed[path] is not None:
            continue  # joins its new name's lineage
        old = next((o for o, n in renamed.items() if n == path), None)
        by_path[path] = Lineage((path, old) if old else (path,))
    for old, new in renamed.items():
        if new is not None and new not in by_path:
            by_path[new] = Lineage((new, old))
    queries = [(cutoff, p) for lin in by_path.values() for p in lin.paths]
    queries += [
        (c.sha, p)
        for c in commits
        for lin in by_path.values()
        if set(lin.paths) & set(c.files)
        for p in lin.paths
    ]
    blobs = blob_ids(upstream, queries)
    for lin in by_path.values():
        at_cutoff = next(((p, blobs[(cutoff, p)]) for p in lin.paths if blobs.get((cutoff, p))), None)
        lin.first = (at_cutoff[0], at_cutoff[1]) if at_cutoff and at_cutoff[1] else None
        for c in commits:
            if not set(lin.paths) & set(c.files):
                continue
            hit = next(((p, blobs[(c.sha, p)]) for p in lin.paths if blobs.get((c.sha, p))), None)
            lin.steps.append((c, hit[0], hit[1]) if hit else (c, None, None))
    return sorted(by_path.values(), key=lambda lin: lin.paths[0])
