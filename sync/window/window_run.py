"""``WindowRun``: what the stages of one window share, in a module of its own so that ``run`` (the whole
window), ``perpr`` (one commit per PR) and ``follow`` type their stages with it without an import cycle."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from sync.merge.filemerge import FileOutcome
from sync.model.question import Question
from sync.model.window import Window
from sync.window.changes import UpstreamChange
from sync.window.plan import Downstream
from sync.window.provenance import WindowProvenance
from sync.window.state import SyncState
from sync.window.transaction import Transaction
from sync.window.translation import TranslateFn, TranslationCache, translate_one

if TYPE_CHECKING:
    from sync.rules import RuleSet


def text_translator(translate_fn: TranslateFn) -> TranslateFn:
    """The translator for uses that read only the translated text (the provenance of intermediate
    versions): vime's, without the conformance check (half a second on a file with HTTP calls); an
    injected one as it is."""
    from sync.conformance.stage import translate_checked
    from sync.translate import translate_file

    return translate_file if translate_fn is translate_checked else translate_fn


@dataclass
class WindowRun:
    """Everything the stages of one window share; filled in as the stages run."""

    upstream: Path
    downstream: Path
    window: Window
    branch: str
    worktree: Path
    reports_rel: str
    rules: RuleSet
    translate_fn: TranslateFn
    changes: list[UpstreamChange]
    state: SyncState | None
    head: str
    cache: TranslationCache
    console: Console
    tx: Transaction | None = None
    down: Downstream | None = None
    up_read: Callable[[str], bytes] | None = None  # upstream blob oid -> its bytes (a BlobReader's read)
    outcomes: list[FileOutcome] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    commits: list[str] = field(default_factory=list)
    text_cache: TranslationCache | None = None  # translations for provenance (``text_translator``)
    provenance: WindowProvenance | None = None
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage, in order
    step_changes: dict[str, list[UpstreamChange]] = field(default_factory=dict)  # --per-pr: per commit
    with_timings: bool = False  # the stage times go into SUMMARY.md too (it then differs run to run)

    def translate(self, path: str, oid: str):  # -> a Translated
        return translate_one(path, oid, self.up_read, self.translate_fn, self.rules, self.cache)

    def translate_text(self, path: str, oid: str):  # -> a Translated whose text is all that is read
        if (path, oid) in self.cache.memory or self.text_cache is None:
            return self.translate(path, oid)
        found = self.cache.get(path, oid)
        if found is not None:
            return found
        text_fn = text_translator(self.translate_fn)
        return translate_one(path, oid, self.up_read, text_fn, self.rules, self.text_cache)

    def window_provenance(self) -> WindowProvenance:
        if self.provenance is None:
            self.provenance = WindowProvenance(self.upstream, self.window, self.translate_text)
        return self.provenance
