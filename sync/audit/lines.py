"""Line identities through a file's versions: the hunks each PR made, what it wrote, what it removed.

Each line gets an identity when a PR writes it (lines of the first version have one too) and keeps
it while later versions leave it alone (``difflib`` opcodes between consecutive versions), so any
line can say which PR wrote it and which PR removed it again. Plain data in, plain data out.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

PR = int | str  # a PR number, or the short sha of a direct push


@dataclass(frozen=True)
class Hunk:
    """One change a PR made to a file: the lines it wrote and removed (identities), where it sits."""

    pr: PR
    line: int  # 1-based, in the version after the PR (where its first written line is, or would be)
    added: tuple[int, ...]
    removed: tuple[int, ...]
    before: int | None = None  # the line it follows (identity; None: the start of the file)
    after: int | None = None  # the line that follows it (None: the end of the file)


@dataclass
class Replay:
    """Every line identity's text, its author and its remover, the final version, and the hunks."""

    text: list[bytes] = field(default_factory=list)  # identity -> the line
    author: list[PR | None] = field(default_factory=list)  # None: in the first version
    removed_by: dict[int, PR] = field(default_factory=dict)
    final: list[int] = field(default_factory=list)  # identities of the last version's lines
    hunks: list[Hunk] = field(default_factory=list)

    def _new(self, line: bytes, pr: PR | None) -> int:
        self.text.append(line)
        self.author.append(pr)
        return len(self.text) - 1


def split(data: bytes | None) -> list[bytes]:
    return data.splitlines(keepends=True) if data else []


def replay(first: bytes | None, versions: list[tuple[PR, bytes | None]]) -> Replay:
    """Track ``first`` (None: absent) through ``versions`` (PR, content or None for deleted), oldest first."""
    r = Replay()
    ids = [r._new(line, None) for line in split(first)]
    for pr, data in versions:
        lines = split(data)
        old = [r.text[i] for i in ids]
        new_ids: list[int] = []
        ops = difflib.SequenceMatcher(None, old, lines, autojunk=False).get_opcodes()
        for tag, i1, i2, j1, j2 in ops:
            if tag == "equal":
                new_ids += ids[i1:i2]
                continue
            gone = ids[i1:i2]
            for i in gone:
                r.removed_by[i] = pr
            made = [r._new(line, pr) for line in lines[j1:j2]]
            before = new_ids[-1] if new_ids else None
            after = ids[i2] if i2 < len(ids) else None  # starts the equal run that follows
            r.hunks.append(Hunk(pr, len(new_ids) + 1, tuple(made), tuple(gone), before, after))
            new_ids += made
        ids = new_ids
    r.final = ids
    return r
