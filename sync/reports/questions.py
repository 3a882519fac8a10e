"""The review queue: one numbered question per conflict hunk, modify/delete, add/add, binary clash,
``unsupported`` rule hit, unmapped reference and parse failure, each with options, a proposed default
and a tier (Decide: a human must choose; Confirm: a default is proposed; Settled: a recorded decision).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sync.window.filemerge import FileOutcome
from sync.window.textmerge import parse_hunks

HUNK_OPTIONS = ["ours", "theirs", "both", "edit"]
FILE_OPTIONS = ["ours", "theirs", "edit"]
NOTE_OPTIONS = ["keep", "edit"]
TIERS = ("Decide", "Confirm", "Settled")


@dataclass
class Question:
    """One item of the review queue (serialised as-is into decisions.json)."""

    id: str
    kind: str
    file: str
    lines: list[int]
    prs: list[int | str]
    rules: list[str]
    options: list[str]
    default: str | None
    tier: str
    key: str
    summary: str
    hunk: int | None = None
    marker_size: int = 7
    sides: dict[str, str] = field(default_factory=dict)
    alternative: str | None = None
    decision: str | None = None
    edit: str | None = None

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
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Question:
        return cls(
            id=d["id"], kind=d["kind"], file=d["file"], lines=list(d.get("lines") or []), prs=list(d.get("prs") or []),
            rules=list(d.get("rules") or []), options=list(d["options"]), default=d.get("default"), tier=d["tier"],
            key=d["key"], summary=d.get("summary", ""), hunk=d.get("hunk"), marker_size=int(d.get("marker_size", 7)),
            sides=dict(d.get("sides") or {}), alternative=d.get("alternative"), decision=d.get("decision"),
            edit=d.get("edit"),
        )  # fmt: skip


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _squash(data: bytes) -> bytes:
    return b"".join(data.split())


def propose_hunk_default(ours: bytes, base: bytes, theirs: bytes) -> tuple[str | None, str]:
    """A safe default for a conflict hunk, or None (Decide). Only whitespace-level differences qualify."""
    if _squash(ours) == _squash(theirs):
        return "ours", "the sides differ in whitespace only"
    if _squash(ours) == _squash(base):
        return "theirs", "ours changed whitespace only"
    if _squash(theirs) == _squash(base):
        return "ours", "theirs changed whitespace only"
    return None, ""


def content_key(kind: str, *parts: bytes | str) -> str:
    """Key of a question by its content, so the same question in a later window finds its decision."""
    h = hashlib.sha256(kind.encode())
    for part in parts:
        raw = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
        h.update(len(raw).to_bytes(8, "big") + raw)
    return h.hexdigest()[:24]


def _rules_in(out: FileOutcome) -> list[str]:
    if out.theirs is None:
        return []
    return sorted({rid for rid, _ in out.theirs.applied})


def _hunk_rules(out: FileOutcome, theirs_side: bytes) -> list[str]:
    """Rules the translator applied on the lines of theirs that the hunk shows (all of the file's if not found)."""
    if out.theirs is None:
        return []
    at = out.theirs.data.find(theirs_side) if theirs_side else -1
    if at < 0:
        return _rules_in(out)
    first = out.theirs.data.count(b"\n", 0, at) + 1
    last = first + max(theirs_side.count(b"\n") - 1, 0)
    return sorted({rid for rid, line in out.theirs.applied if first <= line <= last})


def _new_hits(out: FileOutcome) -> tuple[list[tuple[str, int, str]], list[tuple[str, int, str]]]:
    """Unsupported hits and unmapped references in theirs that the base did not already have."""
    if out.theirs is None:
        return [], []
    old_hits = {(r, s.strip()) for r, _, s in out.base.unsupported} if out.base else set()
    old_refs = {(p, s.strip()) for p, _, s in out.base.unmapped} if out.base else set()
    hits = [h for h in out.theirs.unsupported if (h[0], h[2].strip()) not in old_hits]
    refs = [r for r in out.theirs.unmapped if (r[0], r[2].strip()) not in old_refs]
    return hits, refs


def build_questions(
    outcomes: list[FileOutcome],
    prs_for: Callable[[FileOutcome], list[int | str]],
    recorded: Callable[[str], dict[str, Any] | None],
) -> list[Question]:
    """Every question of the window in file order, numbered Q1..Qn; recorded decisions make them Settled."""
    questions: list[Question] = []

    def add(
        kind: str,
        out: FileOutcome,
        key: str,
        summary: str,
        options: list[str],
        default: str | None,
        **kw: Any,
    ) -> None:
        q = Question(
            id=f"Q{len(questions) + 1}", kind=kind, file=out.path, lines=kw.pop("lines", []), prs=prs_for(out),
            rules=kw.pop("rules", _rules_in(out)), options=options, default=default,
            tier="Confirm" if default else "Decide", key=key, summary=summary, **kw,
        )  # fmt: skip
        record = recorded(key)
        if record is not None and record.get("decision") in options:
            q.tier, q.decision, q.edit = "Settled", record["decision"], record.get("edit")
            q.summary += f" (recorded decision from window {record.get('window', '?')})"
        questions.append(q)

    for out in sorted(outcomes, key=lambda o: o.path):
        if out.outcome in ("conflict", "add_add") and out.data is not None:
            for h in parse_hunks(out.data, out.marker_size):
                default, why = propose_hunk_default(h.ours, h.base, h.theirs)
                what = "added on both sides" if out.outcome == "add_add" else "both sides changed these lines"
                add(
                    out.outcome, out, h.key(out.outcome), f"{what}{'; ' + why if why else ''}", HUNK_OPTIONS, default,
                    lines=[h.start_line, h.end_line], hunk=h.index, marker_size=out.marker_size,
                    rules=_hunk_rules(out, h.theirs),
                    sides={"ours": _text(h.ours), "base": _text(h.base), "theirs": _text(h.theirs)},
                )  # fmt: skip
        elif out.outcome == "modify_delete":
            upstream_deleted = out.data is not None
            ours = out.data or b""
            theirs = out.alternative or b""
            summary = (
                "deleted upstream, changed downstream: ours = keep the file, theirs = delete it"
                if upstream_deleted
                else "deleted downstream, changed upstream: ours = stay deleted, theirs = restore upstream's version"
            )
            add(
                "modify_delete", out, content_key("modify_delete", out.path, ours, theirs), summary, FILE_OPTIONS,
                "ours", sides={"ours": _text(ours), "theirs": _text(theirs)},
                alternative=f"alternatives/{out.path}" if not upstream_deleted else None,
            )  # fmt: skip
        elif out.outcome == "binary":
            add(
                "binary", out, content_key("binary", out.path, out.data or b"", out.alternative or b""),
                "binary file changed on both sides: ours kept; theirs = take upstream's file", ["ours", "theirs"],
                "ours", alternative=f"alternatives/{out.path}",
            )  # fmt: skip
        if out.theirs is not None and out.theirs.parse_error and out.outcome != "not_mirrored":
            add(
                "parse_error", out, content_key("parse_error", out.path, out.theirs.parse_error),
                f"upstream file does not parse, left untranslated: {out.theirs.parse_error}", NOTE_OPTIONS, "keep",
            )  # fmt: skip
        hits, refs = _new_hits(out)
        for rule_id, line, snippet in hits:
            add(
                "unsupported", out, content_key("unsupported", rule_id, snippet.strip()),
                f"rule {rule_id} has no vLLM equivalent; the code is left as upstream wrote it", NOTE_OPTIONS,
                "keep", lines=[line, line], rules=[rule_id], sides={"theirs": snippet},
            )  # fmt: skip
        for ref_path, line, snippet in refs:
            add(
                "unmapped", out, content_key("unmapped", snippet.strip()),
                f"SGLang reference no rule covers ({ref_path})", NOTE_OPTIONS, "keep",
                lines=[line, line], sides={"theirs": snippet},
            )  # fmt: skip
    return questions


def tier_counts(questions: list[Question]) -> dict[str, int]:
    counts = dict.fromkeys(TIERS, 0)
    for q in questions:
        counts[q.tier] += 1
    return counts
