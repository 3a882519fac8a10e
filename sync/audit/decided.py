"""The answers a downstream recorded, read from every ``reports/<window>/decisions.json`` in its tree.

Each window (and each followed PR) leaves its questions there with the option that resolve applied
(a person's, a recorded one, or the proposed default). A hunk question answered ``ours`` keeps the
downstream's lines and drops upstream's; ``edit`` replaces both; a file question answered ``ours``
keeps the downstream's file (or its absence); a port question answered ``ours`` leaves the change to
be ported by hand. The audit names these answers for the lines they explain.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sync.gitio import BlobReader, ls_tree


@dataclass(frozen=True)
class Answer:
    """One answered (or still open) question about one downstream file."""

    window: str
    qid: str
    kind: str
    file: str
    decision: str | None  # None: still waiting for a person
    ours: tuple[bytes, ...] = ()  # the lines of each side the question showed (without line ends)
    theirs: tuple[bytes, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.window} {self.qid}"

    def drops_theirs(self) -> bool:
        """Upstream's side of the question did not land (kept ours, edited, or not answered yet)."""
        return self.decision in (None, "ours", "edit")

    def keeps_ours(self) -> bool:
        return self.decision in (None, "ours", "both", "edit")


def _lines(text: str | None) -> tuple[bytes, ...]:
    return tuple(
        line.rstrip(b"\r") for line in (text or "").encode("utf-8", "surrogateescape").split(b"\n") if line
    )


def _answers_of(window: str, q: dict[str, Any]) -> list[Answer]:
    sides = q.get("sides") or {}
    if not q.get("sites"):
        return [
            Answer(window, q["id"], q["kind"], q["file"], q.get("decision"), _lines(sides.get("ours")),
                   _lines(sides.get("theirs")))
        ]  # fmt: skip
    out = []
    for i, site in enumerate(q["sites"], 1):
        decision = site.get("decision") or q.get("decision")
        out.append(
            Answer(
                window, f"{q['id']}.{i}", q["kind"], site["file"], decision, (), _lines(site.get("snippet"))
            )
        )
    return out


def recorded_answers(downstream: Path, rev: str) -> dict[str, list[Answer]]:
    """Downstream path -> the questions about it in every report folder at ``rev``, oldest window first."""
    tree = ls_tree(downstream, rev)
    docs = sorted(
        p for p in tree if p.startswith("reports/") and p.endswith("/decisions.json") and p.count("/") == 2
    )
    found: dict[str, list[Answer]] = {}
    with BlobReader(downstream) as blobs:
        for path in docs:
            try:
                doc = json.loads(blobs.read(tree[path][1]).decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                continue
            window = path.split("/")[1]
            for q in doc.get("questions", []) if isinstance(doc, dict) else []:
                if isinstance(q, dict) and isinstance(q.get("file"), str) and isinstance(q.get("kind"), str):
                    for answer in _answers_of(window, q):
                        found.setdefault(answer.file, []).append(answer)
    return found
