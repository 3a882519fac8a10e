"""Per-file merge driver: three translated texts in, one outcome out (plain data, no git, no I/O).

Outcomes: theirs (downstream untouched since the last sync), clean, structural (settled per
definition), conflict (diff3 markers kept), new, deleted, modify_delete, add_add, binary,
unchanged, not_mirrored. Downstream work is never dropped: whenever a side would be lost the
outcome is a question and the downstream content stays in the tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sync.window.structmerge import struct_merge
from sync.window.textmerge import DEFAULT_MARKER_SIZE, merge3, parse_hunks
from sync.window.translation import Translated

QUESTION_OUTCOMES = ("conflict", "add_add", "modify_delete", "binary")


@dataclass
class FileOutcome:
    """What the sync does to one downstream path, and why."""

    path: str
    upstream_path: str
    outcome: str
    data: bytes | None = None
    mode: str = "100644"
    remove: list[str] = field(default_factory=list)
    renamed_from: str | None = None
    upstream_old: str | None = None
    conflicts: int = 0
    marker_size: int = DEFAULT_MARKER_SIZE
    structural_hunks: int = 0
    alternative: bytes | None = None
    note: str = ""
    base: Translated | None = None
    theirs: Translated | None = None
    port_group: str | None = None  # port requests decided together: a layout folder or glob, or a folder

    @property
    def has_markers(self) -> bool:
        return self.outcome in ("conflict", "add_add") and self.conflicts > 0


def _is_binary(*items: Translated | bytes | None) -> bool:
    for item in items:
        if isinstance(item, Translated):
            if item.kind == "binary" or b"\0" in item.data:
                return True
        elif item is not None and b"\0" in item:
            return True
    return False


def merge_contents(
    path: str,
    upstream_path: str,
    ours: bytes,
    base: Translated,
    theirs: Translated,
    labels: tuple[str, str, str],
) -> FileOutcome:
    """Merge a file both sides may have changed; ours is the downstream content, base/theirs translated."""
    out = FileOutcome(path, upstream_path, "clean", base=base, theirs=theirs)
    if base.data == theirs.data:
        out.outcome, out.data, out.note = "unchanged", ours, "upstream change vanishes under translation"
        return out
    if ours == base.data:
        out.outcome, out.data = "theirs", theirs.data
        return out
    if ours == theirs.data:
        out.data = ours
        return out
    if _is_binary(base, theirs, ours):
        out.outcome, out.data, out.alternative = "binary", ours, theirs.data
        out.note = "binary file changed on both sides: ours kept, theirs saved aside"
        return out
    merged = merge3(ours, base.data, theirs.data, labels)
    if merged.conflicts == 0:
        out.data = merged.data
        return out
    if path.endswith(".py"):
        settled = struct_merge(ours, base.data, theirs.data)
        if settled is not None:
            out.outcome, out.data = "structural", settled
            out.structural_hunks = len(parse_hunks(merged.data, merged.marker_size))
            return out
    out.outcome, out.data, out.marker_size = "conflict", merged.data, merged.marker_size
    out.conflicts = len(parse_hunks(merged.data, merged.marker_size))
    return out


def merge_added(
    path: str, upstream_path: str, ours: bytes | None, theirs: Translated, labels: tuple[str, str, str]
) -> FileOutcome:
    """Upstream added the file: new to the downstream, identical, or add/add (a 2-way merge on an empty base)."""
    out = FileOutcome(path, upstream_path, "new", data=theirs.data, theirs=theirs)
    if ours is None:
        return out
    if ours == theirs.data:
        out.outcome = "clean"
        return out
    if _is_binary(theirs, ours):
        out.outcome, out.data, out.alternative = "binary", ours, theirs.data
        out.note = "added on both sides with different binary content: ours kept, theirs saved aside"
        return out
    merged = merge3(ours, b"", theirs.data, labels)
    out.outcome, out.data, out.marker_size = "add_add", merged.data, merged.marker_size
    out.conflicts = len(parse_hunks(merged.data, merged.marker_size))
    if out.conflicts == 0:
        out.outcome = "clean"
    return out


def merge_deleted(path: str, upstream_path: str, ours: bytes | None, base: Translated) -> FileOutcome:
    """Upstream deleted the file: delete it when the downstream left it alone, else ask (keeping ours)."""
    if ours is None:
        return FileOutcome(path, upstream_path, "unchanged", note="already absent downstream", base=base)
    if ours == base.data:
        return FileOutcome(path, upstream_path, "deleted", remove=[path], base=base)
    return FileOutcome(
        path, upstream_path, "modify_delete", data=ours, base=base,
        note="deleted upstream, changed downstream: ours kept until decided",
    )  # fmt: skip


def merge_downstream_deleted(
    path: str, upstream_path: str, base: Translated | None, theirs: Translated
) -> FileOutcome:
    """Upstream changed a file the downstream deliberately deleted: stays deleted, theirs saved aside, asked."""
    return FileOutcome(
        path, upstream_path, "modify_delete", data=None, alternative=theirs.data, base=base, theirs=theirs,
        note="changed upstream, deleted downstream: stays deleted until decided",
    )  # fmt: skip
