"""The window's decisions.json: checked for shape, and merged onto the questions commit 1 recorded.

Why merge and not trust: the file a reviewer exports can be stale, truncated or hand-edited. The
questions, files and hunk keys come from the decisions.json committed by ``window`` (commit 1);
the reviewer's file only supplies answers (``decision``, ``edit``, per site), each matched by id
and content key. An answer to a question the window did not ask is refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sync.gitio import GitError, git
from sync.model.errors import SyncError
from sync.model.question import Site
from sync.reports.questions import Question

SCHEMA = "vime-sync/decisions/v1"
FIX = "export it again from review.html"


def parse_decisions(text: str, where: str) -> dict[str, Any]:
    """A decisions document of the right shape, or SyncError naming what is wrong."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise SyncError(f"{where} is not readable JSON ({exc}); {FIX}") from None
    if not isinstance(doc, dict):
        raise SyncError(f"{where} holds a JSON {type(doc).__name__}, not an object; {FIX}")
    if doc.get("schema") != SCHEMA:
        raise SyncError(f"{where}: schema {doc.get('schema')!r} is not {SCHEMA}; {FIX}")
    questions, files = doc.get("questions", []), doc.get("files", {})
    if not isinstance(questions, list) or not all(isinstance(q, dict) for q in questions):
        raise SyncError(f"{where}: 'questions' must be a list of objects; {FIX}")
    if not isinstance(files, dict) or not all(isinstance(v, dict) for v in files.values()):
        raise SyncError(f"{where}: 'files' must map paths to objects; {FIX}")
    window = doc.get("window")
    if not isinstance(window, dict) or not isinstance(window.get("name"), str):
        raise SyncError(f"{where}: 'window' must be an object with a 'name'; {FIX}")
    for i, q in enumerate(questions, 1):
        _check_question(q, i, where)
    return doc


def _check_question(q: dict[str, Any], number: int, where: str) -> None:
    label = f"{where}: question #{number}"
    for name in ("id", "key", "kind", "file", "tier"):
        if not isinstance(q.get(name), str):
            raise SyncError(f"{label} lacks a text '{name}'; {FIX}")
    if not isinstance(q.get("options"), list):
        raise SyncError(f"{label} ({q['id']}) lacks its 'options' list; {FIX}")
    for name in ("decision", "edit"):
        if q.get(name) is not None and not isinstance(q[name], str):
            raise SyncError(
                f"{label} ({q['id']}): '{name}' must be text or null, not {type(q[name]).__name__}"
            )
    sites = q.get("sites") or []
    if not isinstance(sites, list) or not all(isinstance(s, dict) for s in sites):
        raise SyncError(f"{label} ({q['id']}): 'sites' must be a list of objects; {FIX}")
    for s in sites:
        for name in ("decision", "edit"):
            if s.get(name) is not None and not isinstance(s[name], str):
                raise SyncError(f"{label} ({q['id']}): a site's '{name}' must be text or null")


def load_decisions(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SyncError(f"{path} cannot be read ({exc}); {FIX}") from None
    return parse_decisions(text, str(path))


def committed_decisions(worktree: Path, rev: str, rel: str) -> dict[str, Any]:
    """The decisions.json that ``window`` committed at ``rev`` (the trusted questions)."""
    try:
        text = git(worktree, "show", f"{rev}:{rel}").decode("utf-8")
    except (GitError, UnicodeDecodeError):
        raise SyncError(
            f"commit {rev[:10]} has no readable {rel}; recreate the branch with `vime-sync window`"
        ) from None
    return parse_decisions(text, f"{rel} at {rev[:10]}")


def merge_answers(trusted: dict[str, Any], answers: dict[str, Any], where: str) -> list[Question]:
    """The window's own questions, carrying the reviewer's answers; refuse answers to other questions."""
    if answers["window"]["name"] != trusted["window"]["name"]:
        raise SyncError(
            f"{where} is for window {answers['window']['name']!r}, not {trusted['window']['name']!r}; "
            "pass that window's decisions.json"
        )
    own = {q["id"]: q for q in trusted["questions"]}
    given: dict[str, dict[str, Any]] = {}
    for q in answers["questions"]:
        mine = own.get(q["id"])
        if mine is None or mine["key"] != q["key"]:
            raise SyncError(
                f"{where}: {q['id']} does not match a question of this window (stale or edited file); {FIX}"
            )
        given[q["id"]] = q
    questions = []
    for d in trusted["questions"]:
        q = Question.from_dict(d)
        answer = given.get(q.id)
        if answer is not None:
            q.decision, q.edit = answer.get("decision"), answer.get("edit")
            _merge_sites(q, answer.get("sites") or [], where)
        questions.append(q)
    return questions


def _merge_sites(q: Question, sites: list[Site], where: str) -> None:
    if not q.sites:
        return
    by_key = {s.get("key"): s for s in sites}
    for s in q.sites:
        answer = by_key.get(s.get("key"))
        if answer is not None:
            s["decision"], s["edit"] = answer.get("decision"), answer.get("edit")
    if len(by_key.keys() - {s.get("key") for s in q.sites}) > 0:
        raise SyncError(f"{where}: {q.id} lists sites this window does not have; {FIX}")
