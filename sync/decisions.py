"""Recorded review decisions, kept in the downstream repository and keyed by the conflict's content.

When the same conflict (same ours/base/theirs text, or the same unsupported hit) comes back in a
later window, its question is pre-answered and shown as tier Settled; ``resolve`` applies it.
File: ``.vime-sync/decisions.json``::

    {"schema": "vime-sync/recorded-decisions/v1",
     "decisions": {"<key>": {"kind": "conflict", "decision": "theirs", "edit": null,
                             "file": "vime/x.py", "window": "2014-2125", "question": "Q3"}}}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sync.gitio import GitError, git
from sync.textio import decode_utf8

RECORD_PATH = ".vime-sync/decisions.json"
SCHEMA = "vime-sync/recorded-decisions/v1"


def parse_recorded(text: str) -> dict[str, dict[str, Any]]:
    data = json.loads(text)
    if data.get("schema") != SCHEMA:
        raise ValueError(
            f"{RECORD_PATH}: schema {data.get('schema')!r} is not {SCHEMA!r}; fix or remove the file"
        )
    return dict(data.get("decisions", {}))


def load_recorded(downstream: Path, rev: str = "HEAD") -> dict[str, dict[str, Any]]:
    """Decisions committed at ``rev`` (empty before the first resolve)."""
    try:
        raw = git(downstream, "show", f"{rev}:{RECORD_PATH}")
    except GitError:
        return {}
    return parse_recorded(decode_utf8(raw, f"{RECORD_PATH} (committed at {rev})", "fix or remove the file"))


def add_decisions(
    recorded: dict[str, dict[str, Any]], answered: list[dict[str, Any]], window: str
) -> dict[str, dict[str, Any]]:
    """``recorded`` plus every answered question (``{key, kind, decision, edit, file, id}``), newest wins."""
    out = dict(recorded)
    for q in answered:
        out[q["key"]] = {
            "kind": q["kind"],
            "decision": q["decision"],
            "edit": q.get("edit"),
            "file": q["file"],
            "window": window,
            "question": q["id"],
        }
    return out


def dump_recorded(recorded: dict[str, dict[str, Any]]) -> bytes:
    """Stable JSON (sorted keys, fixed indentation) so re-runs give byte-identical files."""
    doc = {"schema": SCHEMA, "decisions": {k: recorded[k] for k in sorted(recorded)}}
    return (json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
