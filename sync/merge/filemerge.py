"""Per-file merge driver: three translated texts in, one outcome out (plain data, no git, no I/O).

Outcomes: theirs (downstream untouched since the last sync), clean, structural (settled per
definition), conflict (diff3 markers kept), new, deleted, modify_delete, add_add, binary,
unchanged, not_mirrored, line_endings (one side converted CRLF/LF: merged on the text, written with
the converting side's endings, asked), mode (only upstream's executable bit changed; ``plan``).
Downstream work is never dropped: whenever a side would be lost the outcome is a question and the
downstream content stays in the tree.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from sync.merge.structmerge import struct_merge
from sync.merge.textmerge import DEFAULT_MARKER_SIZE, merge3, parse_hunks
from sync.model.outcome import Outcome
from sync.model.translated import Translated


@dataclass
class FileOutcome:
    """What the sync does to one downstream path, and why."""

    path: str
    upstream_path: str
    outcome: Outcome
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
    # one side converted the line endings: (ours' style, theirs' style) and the side whose style the
    # file now has ("ours" or "theirs"); a question of its own
    eol: tuple[str, str] | None = None
    eol_by: str = ""
    # upstream changed the file mode and the downstream had not: (ours' mode, theirs' mode); asked
    mode_change: tuple[str, str] | None = None


def _is_binary(*items: Translated | bytes | None) -> bool:
    for item in items:
        if isinstance(item, Translated):
            if item.kind == "binary" or b"\0" in item.data:
                return True
        elif item is not None and b"\0" in item:
            return True
    return False


def eol_style(data: bytes) -> str | None:
    """``"crlf"`` or ``"lf"`` when every line ends the same way, else None (mixed, or one line)."""
    crlf = data.count(b"\r\n")
    lf = data.count(b"\n") - crlf
    if crlf and not lf:
        return "crlf"
    if lf and not crlf:
        return "lf"
    return None


def with_eol(data: bytes, style: str) -> bytes:
    """``data`` with every line ending in ``style``."""
    lf = data.replace(b"\r\n", b"\n")
    return lf.replace(b"\n", b"\r\n") if style == "crlf" else lf


def _eol_converted(ours: bytes, base: bytes, theirs: bytes) -> str | None:
    """Which side converted the line endings of a file whose base had one style: ours, theirs, both."""
    b, o, t = eol_style(base), eol_style(ours), eol_style(theirs)
    if b is None or o is None or t is None or (o == b and t == b):
        return None
    return "both" if o != b and t != b else ("ours" if o != b else "theirs")


def merge_contents(
    path: str,
    upstream_path: str,
    ours: bytes,
    base: Translated,
    theirs: Translated,
    labels: tuple[str, str, str],
) -> FileOutcome:
    """Merge a file both sides may have changed; ours is the downstream content, base/theirs translated."""
    out = FileOutcome(path, upstream_path, Outcome.CLEAN, base=base, theirs=theirs)
    if base.data == theirs.data:
        out.outcome, out.data, out.note = (
            Outcome.UNCHANGED,
            ours,
            "upstream change vanishes under translation",
        )
        return out
    converted = None if _is_binary(base, theirs, ours) else _eol_converted(ours, base.data, theirs.data)
    if converted is not None:
        return _merge_line_endings(path, upstream_path, ours, base, theirs, labels, converted)
    if ours == base.data:
        out.outcome, out.data = Outcome.THEIRS, theirs.data
        return out
    if ours == theirs.data:
        out.data = ours
        return out
    if _is_binary(base, theirs, ours):
        out.outcome, out.data, out.alternative = Outcome.BINARY, ours, theirs.data
        out.note = "binary file changed on both sides: ours kept, theirs saved aside"
        return out
    merged = merge3(ours, base.data, theirs.data, labels)
    if merged.conflicts == 0:
        out.data = merged.data
        return out
    if path.endswith(".py"):
        settled = struct_merge(ours, base.data, theirs.data)
        if settled is not None:
            out.outcome, out.data = Outcome.STRUCTURAL, settled.data
            out.structural_hunks = len(parse_hunks(merged.data, merged.marker_size))
            out.note = (
                f"{out.structural_hunks} line-conflict hunk(s) settled per top-level statement, none changed "
                f"on both sides: {settled.describe()}"
            )
            return out
    out.outcome, out.data, out.marker_size = Outcome.CONFLICT, merged.data, merged.marker_size
    out.conflicts = len(parse_hunks(merged.data, merged.marker_size))
    return out


def _merge_line_endings(
    path: str,
    upstream_path: str,
    ours: bytes,
    base: Translated,
    theirs: Translated,
    labels: tuple[str, str, str],
    converted: str,
) -> FileOutcome:
    """A side converted CRLF/LF: merge the text with one style, then write the converting side's style.

    Why: converting every line changes every line, so a line merge would make the whole file one
    conflict and a whitespace-blind default would undo the conversion (or drop the other side)."""
    lf = [with_eol(x, "lf") for x in (ours, base.data, theirs.data)]
    out = merge_contents(
        path, upstream_path, lf[0], dataclasses.replace(base, data=lf[1]),
        dataclasses.replace(theirs, data=lf[2]), labels,
    )  # fmt: skip
    out.base, out.theirs = base, theirs
    source = theirs.data if converted == "theirs" else ours
    style = eol_style(source) or "lf"
    if out.data is not None:
        out.data = with_eol(out.data, style)
    if converted != "both":
        out.eol, out.eol_by = (eol_style(ours) or "lf", eol_style(theirs.data) or "lf"), converted
        if out.outcome in (Outcome.THEIRS, Outcome.CLEAN, Outcome.UNCHANGED):
            out.outcome = Outcome.LINE_ENDINGS
            out.note = f"{converted} converted the line endings to {style.upper()}: merged, written with them"
    return out


def merge_added(
    path: str, upstream_path: str, ours: bytes | None, theirs: Translated, labels: tuple[str, str, str]
) -> FileOutcome:
    """Upstream added the file: new to the downstream, identical, or add/add (a 2-way merge on an empty base)."""
    out = FileOutcome(path, upstream_path, Outcome.NEW, data=theirs.data, theirs=theirs)
    if ours is None:
        return out
    if ours == theirs.data:
        out.outcome = Outcome.CLEAN
        return out
    if _is_binary(theirs, ours):
        out.outcome, out.data, out.alternative = Outcome.BINARY, ours, theirs.data
        out.note = "added on both sides with different binary content: ours kept, theirs saved aside"
        return out
    merged = merge3(ours, b"", theirs.data, labels)
    out.outcome, out.data, out.marker_size = Outcome.ADD_ADD, merged.data, merged.marker_size
    out.conflicts = len(parse_hunks(merged.data, merged.marker_size))
    if out.conflicts == 0:
        out.outcome = Outcome.CLEAN
    return out


def merge_deleted(path: str, upstream_path: str, ours: bytes | None, base: Translated) -> FileOutcome:
    """Upstream deleted the file: delete it when the downstream left it alone, else ask (keeping ours)."""
    if ours is None:
        return FileOutcome(
            path, upstream_path, Outcome.UNCHANGED, note="already absent downstream", base=base
        )
    if ours == base.data:
        return FileOutcome(path, upstream_path, Outcome.DELETED, remove=[path], base=base)
    return FileOutcome(
        path, upstream_path, Outcome.MODIFY_DELETE, data=ours, base=base,
        note="deleted upstream, changed downstream: ours kept until decided",
    )  # fmt: skip


def merge_downstream_deleted(
    path: str, upstream_path: str, base: Translated | None, theirs: Translated
) -> FileOutcome:
    """Upstream changed a file the downstream deliberately deleted: stays deleted, theirs saved aside, asked."""
    return FileOutcome(
        path, upstream_path, Outcome.MODIFY_DELETE, data=None, alternative=theirs.data, base=base, theirs=theirs,
        note="changed upstream, deleted downstream: stays deleted until decided",
    )  # fmt: skip
