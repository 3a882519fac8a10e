"""A sync window: the upstream commits it covers in merge order, and what lies around it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PR_AT_END = re.compile(r"\(#(\d+)\)\s*$")  # a squash-merged PR's subject ends with (#N)


@dataclass(frozen=True)
class UpstreamCommit:
    """One first-parent commit of upstream main: a merged PR or a direct push (pr is None)."""

    sha: str
    subject: str
    author: str
    date: str
    pr: int | None
    files: tuple[str, ...] = ()

    @property
    def title(self) -> str:
        return PR_AT_END.sub("", self.subject).strip()


@dataclass
class Window:
    """The resolved window: cutoff..tip in merge order, plus what lies around it."""

    from_pr: int
    to_pr: int
    cutoff: str
    tip: str
    commits: list[UpstreamCommit]
    late: list[UpstreamCommit] = field(default_factory=list)  # numbered in range, merged after the tip
    early: list[UpstreamCommit] = field(default_factory=list)  # numbered in range, merged before the cutoff

    @property
    def prs(self) -> list[UpstreamCommit]:
        return [c for c in self.commits if c.pr is not None]

    @property
    def below_range(self) -> list[UpstreamCommit]:
        return [c for c in self.commits if c.pr is not None and c.pr < self.from_pr]

    @property
    def direct_pushes(self) -> list[UpstreamCommit]:
        return [c for c in self.commits if c.pr is None]

    def prs_by_file(self) -> dict[str, list[int | str]]:
        """Upstream path -> PR numbers (or short sha for direct pushes) that touched it, in merge order."""
        out: dict[str, list[int | str]] = {}
        for c in self.commits:
            for f in c.files:
                out.setdefault(f, []).append(c.pr if c.pr is not None else c.sha[:8])
        return out
