"""One item of the review queue, and the vocabulary it is written in: kinds, tiers and options."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypedDict, cast

from sync.model.outcome import Outcome


class Tier(StrEnum):
    """Decide: a person must choose; Confirm: a default is proposed; Settled: a recorded decision applies."""

    DECIDE = "Decide"
    CONFIRM = "Confirm"
    SETTLED = "Settled"


class QuestionKind(StrEnum):
    """What a question is about; the file-level kinds share their value with the file's outcome."""

    CONFLICT = Outcome.CONFLICT.value
    ADD_ADD = Outcome.ADD_ADD.value
    MODIFY_DELETE = Outcome.MODIFY_DELETE.value
    BINARY = Outcome.BINARY.value
    PORT = Outcome.PORT.value
    LINE_ENDINGS = Outcome.LINE_ENDINGS.value
    MODE = Outcome.MODE.value
    PARSE_ERROR = "parse_error"  # the upstream file does not parse: left untranslated
    UNSUPPORTED = "unsupported"  # a rule that has no vLLM equivalent hit these sites
    UNMAPPED = "unmapped"  # an SGLang reference no rule maps
    CONFORMANCE = "conformance"  # a conformance finding on translated lines


class Site(TypedDict, total=False):
    """One place a grouped question lists (a rule hit, an unmapped reference, a port request's file);
    each takes its own answer. A plain dict at run time, serialised as-is into decisions.json."""

    file: str
    lines: list[int]
    prs: list[int | str]
    snippet: str
    key: str
    decision: str | None
    edit: str | None
    recorded_in: str  # the window whose recorded decision it took
    upstream: str  # port requests: the upstream path, its diff and alternative beside the report
    diff: str
    alternative: str | None


class Option(StrEnum):
    OURS = "ours"
    THEIRS = "theirs"
    BOTH = "both"
    EDIT = "edit"
    KEEP = "keep"


TIERS = (Tier.DECIDE, Tier.CONFIRM, Tier.SETTLED)
#: questions answered per conflict hunk (the file has markers)
HUNK_KINDS = (QuestionKind.CONFLICT, QuestionKind.ADD_ADD)
#: questions answered per line: keep the translated line, or edit it
LINE_KINDS = (
    QuestionKind.UNSUPPORTED,
    QuestionKind.UNMAPPED,
    QuestionKind.PARSE_ERROR,
    QuestionKind.CONFORMANCE,
)
#: questions about the whole file's line endings or mode: which side's
ATTRIBUTE_KINDS = (QuestionKind.LINE_ENDINGS, QuestionKind.MODE)
#: grouped questions: one per rule (unsupported) or per SGLang reference (unmapped), listing its sites
GROUP_KINDS = (QuestionKind.UNSUPPORTED, QuestionKind.UNMAPPED)

HUNK_OPTIONS = [Option.OURS, Option.THEIRS, Option.BOTH, Option.EDIT]
PORT_OPTIONS = [
    Option.OURS,
    Option.THEIRS,
]  # ours: vime stays as it is (port by hand); theirs: adopt upstream's
FILE_OPTIONS = [Option.OURS, Option.THEIRS, Option.EDIT]
SIDE_OPTIONS = [Option.OURS, Option.THEIRS]  # line endings and modes: which side's
NOTE_OPTIONS = [Option.KEEP, Option.EDIT]


@dataclass
class Question:
    """One item of the review queue (serialised as-is into decisions.json)."""

    id: str
    kind: QuestionKind  # from_dict keeps the text as read (equal to the member)
    file: str
    lines: list[int]
    prs: list[int | str]
    rules: list[str]
    options: list[Option]
    default: str | None
    tier: Tier
    key: str
    summary: str
    hunk: int | None = None
    marker_size: int = 7
    sides: dict[str, str] = field(default_factory=dict)
    alternative: str | None = None
    decision: str | None = None
    edit: str | None = None
    sites: list[Site] = field(default_factory=list)
    diff: str | None = None
    # files written beside the report (path inside it -> text), not part of decisions.json: the
    # translated diff of each file of a port group
    attachments: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "file": self.file,
            "hunk": self.hunk,
            "lines": self.lines,
            "prs": self.prs,
            "rules": self.rules,
            "tier": self.tier,
            "options": self.options,
            "default": self.default,
            "key": self.key,
            "summary": self.summary,
            "marker_size": self.marker_size,
            "sides": self.sides,
            "alternative": self.alternative,
            "decision": self.decision,
            "edit": self.edit,
            "sites": self.sites,
            "diff": self.diff,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Question:
        return cls(
            id=d["id"], kind=d["kind"], file=d["file"], lines=list(d.get("lines") or []), prs=list(d.get("prs") or []),
            rules=list(d.get("rules") or []), options=list(d["options"]), default=d.get("default"), tier=d["tier"],
            key=d["key"], summary=d.get("summary", ""), hunk=d.get("hunk"), marker_size=int(d.get("marker_size", 7)),
            sides=dict(d.get("sides") or {}), alternative=d.get("alternative"), decision=d.get("decision"),
            edit=d.get("edit"), sites=[cast(Site, dict(s)) for s in d.get("sites") or []], diff=d.get("diff"),
        )  # fmt: skip
