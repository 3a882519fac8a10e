"""Plain data returned by the translator (data in, data out: no I/O here)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

FileKind = Literal["python", "text", "binary", "not_mirrored"]


@dataclass(frozen=True, order=True)
class Applied:
    """A rule that changed the file, at a line of the upstream file (provenance)."""

    rule_id: str
    line: int


@dataclass(frozen=True, order=True)
class Hit:
    """An ``unsupported`` (or ``keep``) rule matched: the code stays and becomes a review question."""

    rule_id: str
    line: int
    snippet: str


@dataclass(frozen=True, order=True)
class Ref:
    """An SGLang reference that no rule converts or covers (file:line:snippet)."""

    path: str
    line: int
    snippet: str


@dataclass
class FileTranslation:
    src_path: str
    dst_path: str | None
    data: bytes
    kind: FileKind
    applied: list[Applied] = field(default_factory=list)
    unsupported: list[Hit] = field(default_factory=list)
    unmapped: list[Ref] = field(default_factory=list)
    parse_error: str | None = None
    # Conformance of the translated code to vLLM's API (sync/conformance; set by its stage):
    http_calls: int = 0
    conformance_unread: str = ""  # why the check could not read this file (it does not parse), or ""
    findings: list[Any] = field(default_factory=list)  # sync.conformance.model.Finding
    questioned: set[Applied] = field(default_factory=set)  # applied rules a finding puts in question

    @property
    def changed(self) -> bool:
        return bool(self.applied)


@dataclass
class TreeStats:
    """hipify-style totals: what was converted, what was left, per rule."""

    files_total: int = 0
    files_translated: int = 0  # at least one rule changed the contents
    files_unchanged: int = 0  # contents as upstream (the path may still be mapped)
    files_binary: int = 0
    files_not_mirrored: int = 0
    files_parse_error: int = 0
    rules_applied: Counter[str] = field(default_factory=Counter)  # path rules included
    unsupported_hits: Counter[str] = field(default_factory=Counter)
    references_converted: int = 0
    references_unsupported: int = 0
    references_unmapped: int = 0
    references_questioned: int = 0  # applied, but the conformance check found the line wrong
    http_calls: int = 0
    conformance_findings: int = 0
    conformance_unread: int = 0  # files the conformance check could not parse (their calls unchecked)

    @property
    def references_total(self) -> int:
        return (
            self.references_converted
            + self.references_unsupported
            + self.references_unmapped
            + self.references_questioned
        )

    @property
    def converted_percent(self) -> float:
        total = self.references_total
        return 100.0 * self.references_converted / total if total else 100.0

    def add(self, result: FileTranslation) -> None:
        self.files_total += 1
        if result.kind == "binary":
            self.files_binary += 1
        elif result.kind == "not_mirrored":
            self.files_not_mirrored += 1
        elif any(applied.line > 0 for applied in result.applied):
            self.files_translated += 1
        else:
            self.files_unchanged += 1
        if result.parse_error:
            self.files_parse_error += 1
        self.rules_applied.update(applied.rule_id for applied in result.applied)
        self.unsupported_hits.update(hit.rule_id for hit in result.unsupported)
        lines = [applied for applied in result.applied if applied.line > 0]
        self.references_converted += sum(1 for applied in lines if applied not in result.questioned)
        self.references_questioned += sum(1 for applied in lines if applied in result.questioned)
        self.http_calls += result.http_calls
        self.conformance_findings += len(result.findings)
        self.conformance_unread += bool(result.conformance_unread)
        self.references_unsupported += len(result.unsupported)
        self.references_unmapped += len(result.unmapped)


@dataclass
class TreeResult:
    files: list[FileTranslation]
    stats: TreeStats
