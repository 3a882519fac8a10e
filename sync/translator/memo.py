"""Remember translated statements, so a statement seen before is not parsed and visited again.

A window translates two versions of every file it touches (the merge base and upstream's tip), and
the two share almost every top-level statement: an edit to one method leaves the rest of the file
as it was. A statement's translation depends only on its text and on what the file around it
decides (its path, the rule tables, the names its imports bind); with those as the key, the second
version of a file costs the statements that changed. The rule events are kept relative to the
statement's first line, so an unchanged statement that moved (lines added above it) is reused too.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from sync.translator.model import Applied

MAX_CHARS = 32_000_000  # statement text kept (keys and results); cleared whole when over


@dataclass(frozen=True)
class Remembered:
    """One statement's translation: new text (None: unchanged) and its events, lines relative."""

    result: object  # str | list[str] | None, as the caller produced it
    applied: tuple[tuple[str, int], ...]
    hits: tuple[tuple[str, int], ...]


class StatementMemo:
    """Translations of statements by (file context, text, ...) within one process."""

    def __init__(self, max_chars: int = MAX_CHARS) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self.entries: dict[Hashable, Remembered] = {}
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> Remembered | None:
        found = self.entries.get(key)
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def put(
        self,
        key: Hashable,
        result: object,
        applied: list[Applied],
        hits: list[tuple[str, int]],
        first: int,
        size: int,
    ) -> None:
        """Store what translating the statement at line ``first`` produced (events absolute);
        ``size``: the characters the entry holds, counted against ``max_chars``."""
        if self.chars + size > self.max_chars:
            self.entries.clear()
            self.chars = 0
        self.chars += size
        self.entries[key] = Remembered(
            result,
            tuple((a.rule_id, a.line - first) for a in applied),
            tuple((rule_id, line - first) for rule_id, line in hits),
        )

    def through(
        self, key: Hashable, text: str, first: int, out: Any, compute: Callable[[], str | None]
    ) -> str | None:
        """A statement's new text (None: unchanged) from memory, else from ``compute()``, which
        records its events in ``out.applied`` / ``out.hits`` and is remembered with them."""
        found = self.get(key)
        if found is not None:
            return self.replay(found, first, out.applied, out.hits)  # type: ignore[return-value]
        applied_before, hits_before = len(out.applied), len(out.hits)
        new = compute()
        size = len(text) + len(new or "")
        self.put(key, new, out.applied[applied_before:], out.hits[hits_before:], first, size)
        return new

    @staticmethod
    def replay(found: Remembered, first: int, applied: list[Applied], hits: list[tuple[str, int]]) -> object:
        """Add a remembered statement's events at line ``first``; return its result."""
        applied.extend(Applied(rule_id, first + line) for rule_id, line in found.applied)
        hits.extend((rule_id, first + line) for rule_id, line in found.hits)
        return found.result


MEMO = StatementMemo()  # one per process: the window's workers each keep their own
