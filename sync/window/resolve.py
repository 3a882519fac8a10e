"""``resolve``: apply the reviewers' decisions on the sync branch -> commit 2 with no markers left,
record the decisions (keyed by conflict content) for later windows, then run the gate.

Only the decisions document is trusted for *which* option; the hunk text always comes from the
file itself (checked against the question's content key), so a stale decisions.json cannot
write the wrong lines.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sync.decisions import RECORD_PATH, add_decisions, dump_recorded, load_recorded_file
from sync.reports.questions import Question, expand_sites, settle_sites
from sync.window.errors import SyncError
from sync.window.gitio import GitError, git, git_text
from sync.window.messages import resolve_message
from sync.window.textmerge import count_markers, parse_hunks, replace_hunks
from sync.window.worktree import commit_paths

HUNK_KINDS = ("conflict", "add_add")
LINE_KINDS = ("unsupported", "unmapped", "parse_error")


@dataclass
class ResolveResult:
    worktree: Path
    report_dir: Path
    commit: str
    applied: dict[str, int]
    markers_left: int
    recorded: int
    touched: list[str] = field(default_factory=list)


def find_report_dir(worktree: Path) -> Path:
    """``reports/slime-<from>-<to>`` of the branch checked out in ``worktree``."""
    try:
        branch = git_text(worktree, "rev-parse", "--abbrev-ref", "HEAD")
    except GitError as exc:
        raise SyncError(
            f"{worktree} is not a git worktree; run resolve in the sync worktree or pass --worktree"
        ) from exc
    m = re.fullmatch(r"sync/(slime-\d+-\d+)", branch)
    if not m:
        raise SyncError(
            f"{worktree} is on branch {branch!r}, not a sync/slime-<from>-<to> branch; pass the sync worktree"
        )
    report_dir = worktree / "reports" / m.group(1)
    if not (report_dir / "decisions.json").exists():
        raise SyncError(
            f"{report_dir}/decisions.json is missing; run `vime-sync window` to create the branch"
        )
    return report_dir


def load_decisions(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SyncError(f"{path} is not readable JSON ({exc}); export it again from review.html") from exc
    if doc.get("schema") != "vime-sync/decisions/v1":
        raise SyncError(
            f"{path}: schema {doc.get('schema')!r} is not vime-sync/decisions/v1; export it from review.html"
        )
    return doc


def choose(questions: list[Question]) -> list[tuple[Question, str]]:
    """The option each question resolves to; refuse while any Decide question is unanswered."""
    open_decide = [q.id for q in questions if q.tier == "Decide" and not q.decision]
    if open_decide:
        shown = ", ".join(open_decide[:8]) + (" ..." if len(open_decide) > 8 else "")
        raise SyncError(
            f"{len(open_decide)} Decide question(s) unanswered ({shown}); answer them in review.html or decisions.json"
        )
    chosen = []
    for q in questions:
        decision = q.decision or q.default
        if decision not in q.options:
            raise SyncError(f"{q.id}: decision {decision!r} is not one of {q.options}; fix decisions.json")
        if decision == "edit" and q.edit is None:
            raise SyncError(f"{q.id}: decision 'edit' needs the edited text in 'edit'; fix decisions.json")
        if decision == "edit" and count_markers(q.edit.encode("utf-8"), q.marker_size):
            raise SyncError(f"{q.id}: the edited text for {q.file} still has conflict markers; remove them")
        chosen.append((q, decision))
    return chosen


def _edit_bytes(q: Question, like: bytes) -> bytes:
    data = (q.edit or "").encode("utf-8")
    if data and like.endswith(b"\n") and not data.endswith(b"\n"):
        data += b"\n"
    return data


def _apply_hunks(worktree: Path, path: str, items: list[tuple[Question, str]]) -> None:
    target = worktree / path
    data = target.read_bytes()
    size = items[0][0].marker_size
    hunks = {h.index: h for h in parse_hunks(data, size)}
    replacements: dict[int, bytes] = {}
    for q, decision in items:
        h = hunks.get(q.hunk if q.hunk is not None else -1)
        if h is None or h.key(q.kind) != q.key:
            raise SyncError(
                f"{q.id}: {path} hunk {q.hunk} no longer matches the question; re-export decisions.json"
            )
        replacements[h.index] = {
            "ours": h.ours, "theirs": h.theirs, "both": h.ours + h.theirs,
        }.get(decision) if decision != "edit" else _edit_bytes(q, h.ours or h.theirs)  # fmt: skip
    target.write_bytes(replace_hunks(data, replacements, size))


def _apply_file(worktree: Path, report_dir: Path, q: Question, decision: str) -> None:
    target = worktree / q.file
    if decision == "ours":
        return
    if decision == "edit":
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(_edit_bytes(q, b"\n"))
        return
    if q.alternative:  # theirs: upstream's version, saved aside by the window
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((report_dir / q.alternative).read_bytes())
    elif target.exists():  # theirs of "deleted upstream": delete
        target.unlink()


def _apply_line(worktree: Path, q: Question, decision: str) -> None:
    if decision == "keep":
        return
    target = worktree / q.file
    lines = target.read_bytes().splitlines(keepends=True)
    snippet = q.sides.get("theirs", "").rstrip("\n").encode("utf-8")
    where = [i for i, line in enumerate(lines) if line.rstrip(b"\r\n") == snippet]
    if not where:
        raise SyncError(
            f"{q.id}: line {snippet.decode(errors='replace')!r} is no longer in {q.file}; edit it by hand"
        )
    best = min(where, key=lambda i: abs(i + 1 - (q.lines[0] if q.lines else 0)))
    lines[best] = _edit_bytes(q, b"\n")
    target.write_bytes(b"".join(lines))


def apply_decisions(worktree: Path, report_dir: Path, chosen: list[tuple[Question, str]]) -> list[str]:
    """Apply every chosen option to the files of the worktree; return the paths touched."""
    by_file: dict[str, list[tuple[Question, str]]] = {}
    for q, decision in chosen:
        if q.kind in HUNK_KINDS:
            by_file.setdefault(q.file, []).append((q, decision))
    for path, items in by_file.items():
        _apply_hunks(worktree, path, items)
    for q, decision in chosen:
        if q.kind not in HUNK_KINDS and q.kind not in LINE_KINDS:
            _apply_file(worktree, report_dir, q, decision)
    for q, decision in chosen:
        if q.kind in LINE_KINDS:
            _apply_line(worktree, q, decision)
    return sorted({q.file for q, _ in chosen})


def _restore(worktree: Path, paths: list[str]) -> None:
    """Undo this run's edits to ``paths`` (back to HEAD), so a refused resolve changes nothing."""
    tracked = set(git_text(worktree, "ls-files").splitlines())
    back = [p for p in paths if p in tracked]
    if back:
        git(worktree, "checkout", "HEAD", "--", *back)
    for p in paths:
        if p not in tracked and (worktree / p).exists():
            (worktree / p).unlink()


def markers_left(worktree: Path, doc: dict[str, Any]) -> dict[str, int]:
    """Conflict hunks still marked, per file that had markers in commit 1."""
    left = {}
    for path, info in doc.get("files", {}).items():
        if info.get("outcome") in HUNK_KINDS and (worktree / path).exists():
            n = count_markers((worktree / path).read_bytes(), int(info.get("marker_size", 7)))
            if n:
                left[path] = n
    return left


def resolve_branch(worktree: Path, decisions: Path | None = None) -> ResolveResult:
    """Apply decisions on the sync branch and commit them (commit 2); raise SyncError and change nothing on bad input."""
    worktree = Path(worktree).resolve()
    report_dir = find_report_dir(worktree)
    doc = load_decisions(Path(decisions) if decisions else report_dir / "decisions.json")
    if git_text(
        worktree,
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        ".",
        f":!{report_dir.relative_to(worktree)}",
    ):
        raise SyncError(f"{worktree} has uncommitted changes; commit or discard them before resolve")
    if not markers_left(worktree, doc) and "resolve" in git_text(worktree, "log", "-1", "--format=%s"):
        raise SyncError(f"{worktree}: this window is already resolved (HEAD is the resolve commit)")
    questions = [Question.from_dict(q) for q in doc.get("questions", [])]
    chosen = choose(expand_sites(questions))  # a grouped question: one per site
    touched = apply_decisions(worktree, report_dir, chosen)
    left = markers_left(worktree, doc)
    if left:
        _restore(worktree, touched)
        raise SyncError(
            f"markers remain after resolve in {', '.join(sorted(left))}; an edited text kept markers: fix it"
        )
    for q, decision in chosen:
        q.decision = decision
    settle_sites(questions, chosen)
    doc["questions"] = [q.to_dict() for q in questions]
    rel_report = report_dir.relative_to(worktree).as_posix()
    (report_dir / "decisions.json").write_text(
        json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    shutil.rmtree(report_dir / "alternatives", ignore_errors=True)
    record_file = worktree / RECORD_PATH
    recorded = add_decisions(
        load_recorded_file(record_file),
        [q.to_dict() for q, _ in chosen],
        doc["window"]["name"].removeprefix("slime-"),
    )
    record_file.parent.mkdir(parents=True, exist_ok=True)
    record_file.write_bytes(dump_recorded(recorded))
    applied = Counter(decision for _, decision in chosen)
    date = git_text(worktree, "log", "-1", "--format=%cd", "--date=raw")
    paths = touched + [RECORD_PATH, rel_report]
    sha = commit_paths(worktree, paths, resolve_message(doc["window"]["name"], dict(applied), 0), date)
    return ResolveResult(worktree, report_dir, sha, dict(applied), 0, len(recorded), touched)
