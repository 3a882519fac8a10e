"""Everything a report needs about one window, gathered once by the pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field

from sync.ledger import LedgerRow
from sync.merge.filemerge import FileOutcome
from sync.model.names import window_name
from sync.model.window import Window
from sync.reports.questions import Question, RegionProvenance


@dataclass
class ReportContext:
    window: Window
    branch: str
    outcomes: list[FileOutcome]
    questions: list[Question] = field(default_factory=list)
    previous_ledger: list[LedgerRow] = field(default_factory=list)  # the ledger at the downstream's HEAD
    downstream_commits: dict[str, str] = field(default_factory=dict)  # upstream sha -> per-PR vime commit
    provenance: RegionProvenance | None = None  # sync.window.provenance.WindowProvenance: regions per file
    timings: dict[str, float] | None = None  # seconds of the window's stages so far (``--timings``)

    def __post_init__(self) -> None:
        self._prs_by_file = self.window.prs_by_file()

    def prs_for(self, out: FileOutcome) -> list[int | str]:
        """PRs (merge order) behind a file, following an upstream rename back to the old path."""
        prs = list(self._prs_by_file.get(out.upstream_path, []))
        if out.upstream_old:
            prs += [p for p in self._prs_by_file.get(out.upstream_old, []) if p not in prs]
        order = {(c.pr if c.pr is not None else c.sha[:8]): i for i, c in enumerate(self.window.commits)}
        return sorted(set(prs), key=lambda p: order.get(p, 0))

    @property
    def order(self) -> list[int | str]:
        """Every PR (or direct-push short sha) of the window in merge order."""
        return [c.pr if c.pr is not None else c.sha[:8] for c in self.window.commits]

    @property
    def name(self) -> str:
        return window_name(self.window.from_pr, self.window.to_pr)
