"""Turn the window's upstream changes into per-file outcomes: path mapping, sides, and which merge applies."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from sync.layout import LAYOUT_FILE, Layout, Placement, parse_layout
from sync.merge.filemerge import (
    FileOutcome,
    merge_added,
    merge_contents,
    merge_deleted,
    merge_downstream_deleted,
)
from sync.model.outcome import Outcome
from sync.window.changes import UpstreamChange
from sync.window.translation import Translated

if TYPE_CHECKING:
    from sync.rules import RuleSet

SPECIAL_MODES = {"120000": "symlink", "160000": "submodule"}


@dataclass
class Downstream:
    """The downstream side of a merge: its tree at the sync's start and paths its history deleted."""

    tree: dict[str, tuple[str, str]]
    read: Callable[[str], bytes]
    deleted_in_history: set[str]

    def content(self, path: str) -> bytes | None:
        entry = self.tree.get(path)
        return self.read(entry[1]) if entry else None

    def mode(self, path: str, default: str) -> str:
        entry = self.tree.get(path)
        return entry[0] if entry else default

    @cached_property
    def layout(self) -> Layout:
        """The downstream's own layout map (``translations/layout.toml`` in its tree), else mirror all."""
        data = self.content(LAYOUT_FILE)
        return parse_layout(data.decode("utf-8", "replace")) if data is not None else Layout()


def _mapped(rules: RuleSet, path: str | None, place: Placement | None) -> str | None:
    if path is None or place is None or place.action == "ignore":
        return None
    return place.to or rules.map_path(path)


def port_group(upstream_path: str, place: Placement | None) -> str:
    """Which port requests a person decides together: those of one layout folder or glob entry, else
    those of one upstream folder (a file entry of its own is a group of one)."""
    if place is not None and place.key:
        return place.key
    folder = upstream_path.rpartition("/")[0]
    return f"{folder}/" if folder else "./"


def port_request(
    path: str,
    upstream_path: str,
    base: Translated | None,
    theirs: Translated | None,
    why: str,
    group: str | None = None,
) -> FileOutcome:
    """A change nothing of which lands: the translated upstream file and diff go beside the report."""
    return FileOutcome(
        path, upstream_path, Outcome.PORT, data=None, base=base, theirs=theirs, note=why,
        alternative=theirs.data if theirs is not None else None,  # None: upstream deleted it
        port_group=group,
    )  # fmt: skip


def merge_labels(cutoff: str, tip: str) -> tuple[str, str, str]:
    """Marker labels: short, fixed, no absolute paths (reports and trees stay byte-identical between runs)."""
    return ("ours (vime)", f"base (slime {cutoff[:8]}, translated)", f"theirs (slime {tip[:8]}, translated)")


def plan_change(
    change: UpstreamChange,
    rules: RuleSet,
    translate: Callable[[str, str], Translated],
    down: Downstream,
    labels: tuple[str, str, str],
) -> FileOutcome:
    """The outcome of one upstream change on the downstream."""
    special = SPECIAL_MODES.get(change.new_mode) or SPECIAL_MODES.get(change.old_mode)
    layout = down.layout
    old_place = layout.place(change.old_path) if change.old_path else None
    new_place = layout.place(change.new_path) if change.new_path else None
    old_dst = _mapped(rules, change.old_path, old_place)
    new_dst = _mapped(rules, change.new_path, new_place)
    if special or (old_dst is None and new_dst is None):
        ignored = next((p for p in (new_place, old_place) if p is not None and p.action == "ignore"), None)
        why = "the rules do not mirror this path"
        if special:
            why = f"{special}: not mirrored"
        elif ignored is not None:
            why = ignored.why
        return FileOutcome(change.path, change.path, Outcome.NOT_MIRRORED, note=why)
    base = translate(change.old_path, change.base_oid) if old_dst and change.base_oid else None
    theirs = translate(change.new_path, change.theirs_oid) if new_dst and change.theirs_oid else None

    port = next((p for p in (new_place, old_place) if p is not None and p.action == "port"), None)
    if port is not None:  # vime-owned: nothing lands, whatever the change
        where = new_dst or old_dst or change.path
        if base is not None and theirs is not None and base.data == theirs.data:
            return FileOutcome(
                where, change.path, Outcome.UNCHANGED, note="upstream change vanishes under translation"
            )
        upstream = change.new_path or change.path
        return port_request(where, upstream, base, theirs, port.why, port_group(upstream, port))

    if new_dst is None:  # deleted upstream (or moved out of the mirror)
        assert old_dst is not None and base is not None
        return merge_deleted(old_dst, change.old_path or "", down.content(old_dst), base)

    assert theirs is not None and change.new_path is not None
    if old_dst is None or base is None:  # added upstream (or moved into the mirror)
        out = merge_added(new_dst, change.new_path, down.content(new_dst), theirs, labels)
        out.mode = change.new_mode if out.outcome == Outcome.NEW else down.mode(new_dst, change.new_mode)
        return out

    # modified, possibly renamed: ours is the downstream file at the old path (or already at the new one)
    source = old_dst
    if old_dst != new_dst and old_dst not in down.tree and new_dst in down.tree:
        source = new_dst
    elif old_dst != new_dst and old_dst in down.tree and new_dst in down.tree:
        # the downstream has its own file where upstream moved this one: do not move over it
        out = merge_contents(old_dst, change.new_path, down.content(old_dst) or b"", base, theirs, labels)
        out.mode, out.upstream_old = down.mode(old_dst, change.new_mode), change.old_path
        out.note = f"upstream moved it to {new_dst}, where the downstream has its own file: merged in place"
        return out
    ours = down.content(source)
    if ours is None:
        if source in down.deleted_in_history:
            return merge_downstream_deleted(new_dst, change.new_path, base, theirs)
        return port_request(
            new_dst, change.new_path, base, theirs, "changed upstream, never in the downstream",
            port_group(change.new_path, None),
        )  # fmt: skip
    out = merge_contents(new_dst, change.new_path, ours, base, theirs, labels)
    out.mode = down.mode(source, change.new_mode)
    _take_mode_change(out, change.old_mode, change.new_mode)
    if change.old_path != change.new_path:
        out.upstream_old = change.old_path
    if source != new_dst:
        out.renamed_from = source
        out.remove.append(source)
        if out.outcome == Outcome.MODIFY_DELETE:
            out.remove.clear()
    return out


REGULAR_MODES = ("100644", "100755")


def _take_mode_change(out: FileOutcome, base_mode: str, theirs_mode: str) -> None:
    """Upstream changed the executable bit where the downstream kept the old one: it lands, asked.

    Why: a mode change has no content, so the content merge alone would call it ``unchanged``."""
    if base_mode == theirs_mode or {base_mode, theirs_mode} - set(REGULAR_MODES) or out.data is None:
        return
    if out.mode != base_mode or out.outcome in (Outcome.MODIFY_DELETE, Outcome.BINARY):
        return  # the downstream changed it too (to the same bit), or nothing of theirs lands
    out.mode_change, out.mode = (base_mode, theirs_mode), theirs_mode
    if out.outcome == Outcome.UNCHANGED:
        out.outcome, out.note = Outcome.MODE, f"upstream changed only the mode ({base_mode} -> {theirs_mode})"


def translation_jobs(changes: list[UpstreamChange], rules: RuleSet) -> list[tuple[str, str]]:
    """Every (upstream path, blob id) that ``plan_change`` will translate, for the parallel pre-pass."""
    jobs: list[tuple[str, str]] = []
    for c in changes:
        if SPECIAL_MODES.get(c.new_mode) or SPECIAL_MODES.get(c.old_mode):
            continue
        if c.old_path and c.base_oid and rules.map_path(c.old_path):
            jobs.append((c.old_path, c.base_oid))
        if c.new_path and c.theirs_oid and rules.map_path(c.new_path):
            jobs.append((c.new_path, c.theirs_oid))
    return jobs
