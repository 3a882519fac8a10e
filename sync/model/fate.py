"""What a translation run did with each file, in LibCST's codemod words, and the line that totals it.

Each file has exactly one fate, so the closing line's counts add up to the files read and a failure is
counted from the files that failed, never written as a figure.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import StrEnum

NOT_MIRRORED = "not mirrored: not written"
BINARY = "binary: copied as is"


class Fate(StrEnum):
    TRANSFORMED = "transformed"  # at least one rule changed the contents
    UNCHANGED = "unchanged"  # no rule applies: copied as is
    SKIPPED = "skipped"  # not written, or copied without reading (the reason says which)
    FAILED = "failed"  # the translator could not run on it (the reason says why and what was written)


@dataclass(frozen=True)
class FileFate:
    path: str  # the upstream path
    fate: Fate
    reason: str = ""  # skipped and failed: one line


@dataclass(frozen=True)
class RunFates:
    """Every file's fate and the references left unmapped, as a run reports them."""

    files: tuple[FileFate, ...]
    unmapped_references: int = 0

    def count(self, fate: Fate) -> int:
        return sum(1 for f in self.files if f.fate is fate)

    def of(self, fate: Fate) -> list[FileFate]:
        return [f for f in self.files if f.fate is fate]

    def closing_line(self) -> str:
        """``transformed T, unchanged U (...), skipped S (...), failed F, warnings W (...)``: the failed
        files are listed above it, one line each with the reason."""
        skipped = Counter(f.reason for f in self.of(Fate.SKIPPED))
        order = [NOT_MIRRORED, BINARY, *sorted(set(skipped) - {NOT_MIRRORED, BINARY})]
        why = "; ".join(f"{skipped[reason]} {reason}" for reason in order if skipped[reason])
        failed = self.count(Fate.FAILED)
        return (
            f"transformed {self.count(Fate.TRANSFORMED)}, unchanged {self.count(Fate.UNCHANGED)} (no rule "
            f"applies: copied as is), skipped {self.count(Fate.SKIPPED)}"
            + (f" ({why})" if why else "")
            + f", failed {failed}"
            + (" (listed above with the reason)" if failed else "")
            + f", warnings {self.unmapped_references} ({self.unmapped_references} unmapped references)"
        )
