"""A file as the translator left it, in the form the merge, the reports and the cache share."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol


class _RuleAt(Protocol):
    @property
    def rule_id(self) -> str: ...
    @property
    def line(self) -> int: ...


class _RuleHit(_RuleAt, Protocol):
    @property
    def snippet(self) -> str: ...


class _Reference(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def snippet(self) -> str: ...


class FileTranslationLike(Protocol):
    """What ``Translated.from_file_translation`` reads of a sync.translator.model.FileTranslation (sync.model
    imports nothing else of sync, so it names the shape, not the class). ``findings`` and ``questioned``,
    set by the conformance stage, are read when present."""

    @property
    def src_path(self) -> str: ...
    @property
    def dst_path(self) -> str | None: ...
    @property
    def data(self) -> bytes: ...
    @property
    def kind(self) -> str: ...
    @property
    def applied(self) -> Iterable[_RuleAt]: ...
    @property
    def unsupported(self) -> Iterable[_RuleHit]: ...
    @property
    def unmapped(self) -> Iterable[_Reference]: ...
    @property
    def parse_error(self) -> str | None: ...


@dataclass(frozen=True)
class Translated:
    """What the merge needs from a FileTranslation, in a form that serialises to the cache."""

    src_path: str
    dst_path: str | None
    data: bytes
    kind: str
    applied: tuple[tuple[str, int], ...] = ()
    unsupported: tuple[tuple[str, int, str], ...] = ()
    unmapped: tuple[tuple[str, int, str], ...] = ()
    parse_error: str | None = None
    findings: tuple[
        tuple[int, str, str, str, str], ...
    ] = ()  # conformance: (line, rule, kind, message, effect)
    questioned: tuple[tuple[str, int], ...] = ()  # applied rules a finding puts in question: not conversions

    @classmethod
    def from_file_translation(cls, ft: FileTranslationLike) -> Translated:
        return cls(
            src_path=ft.src_path,
            dst_path=ft.dst_path,
            data=bytes(ft.data),
            kind=ft.kind,
            applied=tuple((str(a.rule_id), int(a.line)) for a in ft.applied),
            unsupported=tuple((str(h.rule_id), int(h.line), str(h.snippet)) for h in ft.unsupported),
            unmapped=tuple((str(r.path), int(r.line), str(r.snippet)) for r in ft.unmapped),
            parse_error=ft.parse_error,
            findings=tuple(
                (int(f.line), str(f.rule), str(f.kind), str(f.message), str(f.effect))
                for f in getattr(ft, "findings", ())
            ),
            questioned=tuple(sorted((str(a.rule_id), int(a.line)) for a in getattr(ft, "questioned", ()))),
        )

    def to_json(self) -> str:
        return json.dumps(
            {
                "src_path": self.src_path,
                "dst_path": self.dst_path,
                "data": base64.b64encode(self.data).decode(),
                "kind": self.kind,
                "applied": self.applied,
                "unsupported": self.unsupported,
                "unmapped": self.unmapped,
                "parse_error": self.parse_error,
                "findings": self.findings,
                "questioned": self.questioned,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Translated:
        d = json.loads(text)
        return cls(
            d["src_path"],
            d["dst_path"],
            base64.b64decode(d["data"]),
            d["kind"],
            tuple(tuple(a) for a in d["applied"]),  # type: ignore[misc]
            tuple(tuple(h) for h in d["unsupported"]),  # type: ignore[misc]
            tuple(tuple(r) for r in d["unmapped"]),  # type: ignore[misc]
            d["parse_error"],
            tuple(tuple(f) for f in d.get("findings", ())),  # type: ignore[misc]
            tuple(tuple(a) for a in d.get("questioned", ())),  # type: ignore[misc]
        )
