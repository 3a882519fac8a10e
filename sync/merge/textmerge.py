"""Line-level 3-way merge (``git merge-file --diff3``) and the conflict hunks it leaves.

The markers are diff3 style (ours, base, theirs) and stay in commit 1 as the review queue;
``parse_hunks`` and ``replace_hunks`` are how reports and resolve read and settle them.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sync.gitio import git_run

DEFAULT_MARKER_SIZE = 7


def choose_marker_size(*texts: bytes) -> int:
    """7, or longer when a side already has lines that look like markers (so the parse stays exact)."""
    longest = 0
    for text in texts:
        for line in text.splitlines():
            ch = line[:1]
            if ch not in (b"<", b"|", b"=", b">"):
                continue
            run = len(line) - len(line.lstrip(ch))
            if run >= DEFAULT_MARKER_SIZE and line[run : run + 1] in (b" ", b"\t", b""):
                longest = max(longest, run)
    return max(DEFAULT_MARKER_SIZE, longest + 1) if longest else DEFAULT_MARKER_SIZE


@dataclass(frozen=True)
class MergeResult:
    """Merged bytes and how many conflict hunks git left in them."""

    data: bytes
    conflicts: int
    marker_size: int


def merge3(ours: bytes, base: bytes, theirs: bytes, labels: tuple[str, str, str]) -> MergeResult:
    """3-way merge of three byte strings with git merge-file; markers are diff3 style."""
    size = choose_marker_size(ours, base, theirs)
    with tempfile.TemporaryDirectory(prefix="vime-merge-") as tmp:
        paths = [Path(tmp) / name for name in ("ours", "base", "theirs")]
        for p, data in zip(paths, (ours, base, theirs), strict=True):
            p.write_bytes(data)
        proc = git_run(
            None, "merge-file", "-p", "--diff3", f"--marker-size={size}",
            "-L", labels[0], "-L", labels[1], "-L", labels[2], *map(str, paths),
        )  # fmt: skip
    if proc.returncode < 0 or proc.returncode > 127:
        raise RuntimeError(f"git merge-file failed: {proc.stderr.decode(errors='replace').strip()}")
    return MergeResult(proc.stdout, proc.returncode, size)


@dataclass(frozen=True)
class Hunk:
    """One conflict region of a merged file; lines are 1-based in the file with markers."""

    index: int
    start_line: int
    end_line: int
    ours: bytes
    base: bytes
    theirs: bytes

    def key(self, kind: str = "conflict") -> str:
        """Content key of the conflict: the same three sides give the same key in any window or file."""
        h = hashlib.sha256(kind.encode())
        for part in (self.ours, self.base, self.theirs):
            h.update(len(part).to_bytes(8, "big"))
            h.update(part)
        return h.hexdigest()[:24]


def _is_marker(line: bytes, ch: bytes, size: int) -> bool:
    if not line.startswith(ch * size):
        return False
    rest = line[size:]
    return rest[:1] in (b" ", b"\t", b"\n", b"\r", b"")


def parse_hunks(data: bytes, marker_size: int = DEFAULT_MARKER_SIZE) -> list[Hunk]:
    """Every diff3 conflict hunk in ``data`` in file order."""
    lines = data.splitlines(keepends=True)
    hunks: list[Hunk] = []
    i = 0
    while i < len(lines):
        if not _is_marker(lines[i], b"<", marker_size):
            i += 1
            continue
        start = i
        sections: dict[str, list[bytes]] = {"ours": [], "base": [], "theirs": []}
        part = "ours"
        i += 1
        while i < len(lines) and not _is_marker(lines[i], b">", marker_size):
            line = lines[i]
            if part == "ours" and _is_marker(line, b"|", marker_size):
                part = "base"
            elif part in ("ours", "base") and _is_marker(line, b"=", marker_size):
                part = "theirs"
            else:
                sections[part].append(line)
            i += 1
        hunks.append(
            Hunk(
                len(hunks),
                start + 1,
                i + 1,
                b"".join(sections["ours"]),
                b"".join(sections["base"]),
                b"".join(sections["theirs"]),
            )
        )
        i += 1
    return hunks


def replace_hunks(
    data: bytes, replacements: dict[int, bytes], marker_size: int = DEFAULT_MARKER_SIZE
) -> bytes:
    """``data`` with hunk ``i`` replaced by ``replacements[i]``; hunks not listed keep their markers."""
    lines = data.splitlines(keepends=True)
    hunks = parse_hunks(data, marker_size)
    out: list[bytes] = []
    pos = 0
    for h in hunks:
        out.extend(lines[pos : h.start_line - 1])
        if h.index in replacements:
            out.append(replacements[h.index])
        else:
            out.extend(lines[h.start_line - 1 : h.end_line])
        pos = h.end_line
    out.extend(lines[pos:])
    return b"".join(out)


def count_markers(data: bytes, marker_size: int = DEFAULT_MARKER_SIZE) -> int:
    """Number of conflict hunks still marked in ``data``."""
    return len(parse_hunks(data, marker_size))
