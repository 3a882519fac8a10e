"""``resolve``: apply the reviewers' decisions on the sync branch -> commit 2 with no markers left,
record the decisions (keyed by conflict content) for later windows, then run the gate.

A transaction, like ``window``: every answer is checked and every new file content computed in
memory first (a stale hunk in the third of three files is refused before the first is written);
then the files, the record and the commits are written, and on any exception, Ctrl-C or SIGTERM
all of it is undone. The questions come from commit 1 (``decisions_doc``): the reviewer's file
only answers them, and the hunk text always comes from the file itself (checked by content key).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sync.decisions import RECORD_PATH, add_decisions, dump_recorded, parse_recorded
from sync.gitio import GitError, git_text
from sync.merge.filemerge import with_eol
from sync.merge.textmerge import count_markers, parse_hunks, replace_hunks
from sync.model import names
from sync.model.errors import SyncError
from sync.model.names import label_of_name, window_span
from sync.model.outcome import WITH_MARKERS
from sync.model.question import ATTRIBUTE_KINDS, HUNK_KINDS, LINE_KINDS, Option, QuestionKind, Tier
from sync.reports.questions import Question, expand_sites, settle_sites
from sync.reports.questions_md import dump_json
from sync.textio import read_utf8
from sync.window.checks import git_common_dir
from sync.window.decisions_doc import committed_decisions, load_decisions, merge_answers
from sync.window.follow_branch import window_name_of
from sync.window.messages import resolve_message
from sync.window.transaction import Stage, Transaction, check_killed_run, run_stages, transaction
from sync.window.worktree import commit_paths, inside

__all__ = [
    "AlreadyResolved",
    "ResolveResult",
    "find_report_dir",
    "load_decisions",
    "markers_left",
    "plan_resolve",
    "resolve_branch",
]

GateFn = Callable[[Path, Path], "bool | None"]


class AlreadyResolved(SyncError):
    """The window has its resolve commit (and its gate result); nothing to do."""


@dataclass
class ResolveResult:
    worktree: Path
    report_dir: Path
    commit: str
    applied: dict[str, int]
    markers_left: int
    recorded: int
    touched: list[str] = field(default_factory=list)
    gate_passed: bool | None = None
    gate_only: bool = False


def find_report_dir(worktree: Path) -> Path:
    """``reports/slime-<from>-<to>`` of the branch checked out in ``worktree`` (a window's branch, or the
    follow branch: the window of the PR at its tip)."""
    try:
        branch = git_text(worktree, "rev-parse", "--abbrev-ref", "HEAD")
    except GitError as exc:
        raise SyncError(
            f"{worktree} is not a git worktree; pass --worktree PATH of the sync worktree"
        ) from exc
    name = window_name_of(worktree, branch)
    if name is None:
        raise SyncError(
            f"{worktree} is on branch {branch!r}, not a sync/slime-<from>-<to> branch; pass the sync worktree"
        )
    top = Path(git_text(worktree, "rev-parse", "--show-toplevel")).resolve()
    report_dir = top / "reports" / name
    if not (report_dir / "decisions.json").exists():
        raise SyncError(
            f"{report_dir}/decisions.json is missing, so {branch} is not a complete window; remove it "
            f"(git worktree remove --force {top}; git branch -D {branch}) and run `vime-sync window` again"
        )
    return report_dir


def window_commits(worktree: Path, name: str) -> tuple[str, str | None]:
    """This window's commit 1 (the 3-way merge) and its resolve commit, if any, on HEAD's history.

    Only commits of *this* window count: an earlier window merged into main has its own."""
    label = label_of_name(name)
    merge_subject, resolve_subject = names.merge_subject(label), names.resolve_subject(label)
    log = git_text(worktree, "log", "--first-parent", "--format=%H%x00%s", "HEAD").splitlines()
    resolved = None
    for line in log:  # newest first
        sha, _, subject = line.partition("\0")
        if subject == resolve_subject and resolved is None:
            resolved = sha
        if subject == merge_subject:
            return sha, resolved
    branch = git_text(worktree, "rev-parse", "--abbrev-ref", "HEAD")
    raise SyncError(
        f"no `{merge_subject}` commit on {branch}, so it is not a complete window; remove it (git worktree "
        f"remove --force {worktree}; git branch -D {branch}) and run `vime-sync window` again"
    )


def choose(questions: list[Question]) -> list[tuple[Question, str]]:
    """The option each question resolves to; refuse while any Decide question is unanswered."""
    open_decide = [q.id for q in questions if q.tier == Tier.DECIDE and not q.decision]
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
        if decision == Option.EDIT and q.edit is None:
            raise SyncError(f"{q.id}: decision 'edit' needs the edited text in 'edit'; fix decisions.json")
        if decision == Option.EDIT and count_markers(q.edit.encode("utf-8"), q.marker_size):
            raise SyncError(f"{q.id}: the edited text for {q.file} still has conflict markers; remove them")
        chosen.append((q, decision))
    return chosen


class Overlay:
    """New file contents computed in memory (None: delete) over the worktree, before anything is written."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.changes: dict[str, bytes | None] = {}
        self.modes: dict[str, str] = {}  # git modes to set ("100644" / "100755")

    def read(self, path: str) -> bytes | None:
        if path in self.changes:
            return self.changes[path]
        target = self.root / path
        return target.read_bytes() if target.is_file() else None

    def write(self, path: str, data: bytes | None) -> None:
        self.changes[path] = data


def _edit_bytes(q: Question, like: bytes) -> bytes:
    data = (q.edit or "").encode("utf-8")
    if data and like.endswith(b"\n") and not data.endswith(b"\n"):
        data += b"\n"
    return data


def _apply_hunks(files: Overlay, path: str, items: list[tuple[Question, str]]) -> None:
    data = files.read(path)
    if data is None:
        raise SyncError(
            f"{items[0][0].id}: {path} is missing from the worktree; restore it (git checkout HEAD -- {path})"
        )
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
            Option.OURS: h.ours, Option.THEIRS: h.theirs, Option.BOTH: h.ours + h.theirs,
        }.get(decision) if decision != Option.EDIT else _edit_bytes(q, h.ours or h.theirs)  # fmt: skip
    files.write(path, replace_hunks(data, replacements, size))


def _apply_file(files: Overlay, report_rel: str, q: Question, decision: str) -> None:
    if decision == Option.OURS:
        return
    if decision == Option.EDIT:
        files.write(q.file, _edit_bytes(q, b"\n"))
        return
    if q.alternative:  # theirs: upstream's version, saved aside by the window
        saved = files.read(f"{report_rel}/{q.alternative}")
        if saved is None:
            raise SyncError(f"{q.id}: {report_rel}/{q.alternative} is missing; restore it from commit 1")
        files.write(q.file, saved)
    elif files.read(q.file) is not None:  # theirs of "deleted upstream": delete
        files.write(q.file, None)


def _apply_line(files: Overlay, q: Question, decision: str) -> None:
    if decision == Option.KEEP:
        return
    data = files.read(q.file)
    lines = (data or b"").splitlines(keepends=True)
    snippet = q.sides.get("theirs", "").rstrip("\n").encode("utf-8")
    where = [i for i, line in enumerate(lines) if line.rstrip(b"\r\n") == snippet]
    if not where:
        raise SyncError(
            f"{q.id}: line {snippet.decode(errors='replace')!r} is no longer in {q.file}; edit it by hand"
        )
    best = min(where, key=lambda i: abs(i + 1 - (q.lines[0] if q.lines else 0)))
    lines[best] = _edit_bytes(q, b"\n")
    files.write(q.file, b"".join(lines))


def _apply_attribute(files: Overlay, q: Question, decision: str) -> None:
    """Line endings or mode of the whole file, as the chosen side had them (after every other edit)."""
    value = q.sides.get(decision, "")
    if q.kind == QuestionKind.MODE:
        if value not in ("100644", "100755"):
            raise SyncError(f"{q.id}: mode {value!r} is not 100644 or 100755; export decisions.json again")
        files.modes[q.file] = value
        return
    data = files.read(q.file)
    if data is not None and value.lower() in ("lf", "crlf"):
        files.write(q.file, with_eol(data, value.lower()))


def apply_decisions(files: Overlay, report_rel: str, chosen: list[tuple[Question, str]]) -> list[str]:
    """Apply every chosen option to the overlay (nothing written yet); return the paths touched."""
    by_file: dict[str, list[tuple[Question, str]]] = {}
    for q, decision in chosen:
        if q.kind in HUNK_KINDS:
            by_file.setdefault(q.file, []).append((q, decision))
    for path, items in by_file.items():
        _apply_hunks(files, path, items)
    for q, decision in chosen:
        if q.kind not in (*HUNK_KINDS, *LINE_KINDS, *ATTRIBUTE_KINDS):
            _apply_file(files, report_rel, q, decision)
    for q, decision in chosen:
        if q.kind in LINE_KINDS:
            _apply_line(files, q, decision)
    for q, decision in chosen:
        if q.kind in ATTRIBUTE_KINDS:
            _apply_attribute(files, q, decision)
    return sorted({q.file for q, _ in chosen})


def markers_left(
    worktree: Path, doc: dict[str, Any], read: Callable[[str], bytes | None] | None = None
) -> dict[str, int]:
    """Conflict hunks still marked, per file that had markers in commit 1."""
    read = read or (lambda p: (worktree / p).read_bytes() if (worktree / p).is_file() else None)
    left = {}
    for path, info in doc.get("files", {}).items():
        data = read(path) if info.get("outcome") in WITH_MARKERS else None
        if data is not None:
            n = count_markers(data, int(info.get("marker_size", 7)))
            if n:
                left[path] = n
    return left


@dataclass
class ResolveRun:
    """What the resolve stages share."""

    worktree: Path
    report_dir: Path
    report_rel: str
    doc: dict[str, Any]
    questions: list[Question]
    files: Overlay
    chosen: list[tuple[Question, str]]
    touched: list[str]
    gate: GateFn | None
    tx: Transaction | None = None
    commit: str = ""
    recorded: int = 0
    gate_passed: bool | None = None


def _write(tx: Transaction, target: Path, data: bytes | None) -> None:
    """Write (or delete) one file, after registering how to put it back (and the folders it makes)."""
    register_restore(tx, target)
    if data is None:
        target.unlink(missing_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():
            target.unlink()
        target.write_bytes(data)


def register_restore(tx: Transaction, target: Path) -> None:
    """Register how to put ``target`` back as it is now, and remove the folders a write there would
    make: on the journal when the run has one (``--repair`` after a SIGKILL), else in memory."""
    old = target.read_bytes() if target.is_file() else None
    mode = target.stat().st_mode & 0o7777 if target.is_file() else None
    made = [str(p) for p in (target.parent, *target.parent.parents) if not p.exists()]
    journal, backup = tx.backup(old) if old is not None else ("", None)
    if old is not None and backup is None:  # no journal on disk: keep the bytes for this process only
        tx.undo(f"restore {target}", lambda: _restore_in_memory(target, old, mode))
    else:
        tx.undo_step(
            "restore",
            f"restore {target}",
            journal=journal,
            path=str(target),
            backup=backup,
            mode=mode,
            made=made,
        )


def _restore_in_memory(target: Path, old: bytes, mode: int | None) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(old)
    if mode is not None:
        target.chmod(mode)


def _chmod(tx: Transaction, target: Path, mode: int) -> None:
    """Set one file's permission bits, after registering how to put them back."""
    if not target.is_file():
        return
    tx.undo_step(
        "chmod", f"restore the mode of {target}", path=str(target), mode=target.stat().st_mode & 0o7777
    )
    target.chmod(mode)


def _commit(run: ResolveRun, paths: list[str], message: str) -> str:
    assert run.tx is not None
    before = git_text(run.worktree, "rev-parse", "HEAD")
    # undone only if it happened: a commit made, or paths a failed commit left staged
    run.tx.undo_step("reset", f"reset the branch to {before[:10]}", worktree=str(run.worktree), before=before)
    date = git_text(run.worktree, "log", "-1", "--format=%cd", "--date=raw")
    return commit_paths(run.worktree, paths, message, date)


def stage_apply(run: ResolveRun) -> None:
    assert run.tx is not None
    for path in run.files.changes:
        inside(run.worktree, path)  # all checked before the first write
    for path, data in sorted(run.files.changes.items()):
        _write(run.tx, run.worktree / path, data)
    for path, mode in sorted(run.files.modes.items()):
        _chmod(run.tx, run.worktree / path, 0o755 if mode == "100755" else 0o644)


def stage_record(run: ResolveRun) -> None:
    assert run.tx is not None
    doc = run.doc
    for q, decision in run.chosen:
        q.decision = decision
    settle_sites(run.questions, run.chosen)
    doc["questions"] = [q.to_dict() for q in run.questions]
    _write(run.tx, run.report_dir / "decisions.json", dump_json(doc))
    alternatives = run.report_dir / "alternatives"
    if alternatives.is_dir():
        for f in sorted(p for p in alternatives.rglob("*") if p.is_file() or p.is_symlink()):
            _write(run.tx, f, None)
        for d in sorted((p for p in alternatives.rglob("*") if p.is_dir()), reverse=True) + [alternatives]:
            with contextlib.suppress(OSError):
                d.rmdir()  # empty now (the undo of each file recreates its folders)
    record_file = run.worktree / RECORD_PATH
    before = read_utf8(record_file, "fix or remove it", RECORD_PATH) if record_file.is_file() else None
    try:
        recorded = parse_recorded(before) if before is not None else {}
    except ValueError as exc:
        raise SyncError(f"{RECORD_PATH} is unreadable ({exc}); fix or remove it") from None
    answered = [q.to_dict() for q, _ in run.chosen]
    recorded = add_decisions(recorded, answered, window_span(doc["window"]["name"]))
    run.recorded = len(recorded)
    _write(run.tx, record_file, dump_recorded(recorded))


def stage_commit(run: ResolveRun) -> None:
    applied = Counter(decision for _, decision in run.chosen)
    paths = [*run.touched, RECORD_PATH, run.report_rel]
    run.commit = _commit(run, paths, resolve_message(run.doc["window"]["name"], dict(applied), 0))


def stage_gate(run: ResolveRun) -> None:
    """Run the gate (when asked) and commit its report; a crash of the gate undoes the whole resolve."""
    if run.gate is None:
        return
    assert run.tx is not None
    for name in ("gate.json", "GATE.md"):
        target = run.report_dir / name
        _write(run.tx, target, target.read_bytes() if target.is_file() else None)  # snapshot only
    run.gate_passed = run.gate(run.worktree, run.report_dir)
    if run.gate_passed is None:
        return
    written = [p.relative_to(run.worktree).as_posix() for p in run.report_dir.glob("gate.json")]
    written += [p.relative_to(run.worktree).as_posix() for p in run.report_dir.glob("GATE*")]
    if written:
        _commit(run, written, f"sync: gate {'passed' if run.gate_passed else 'failed'}\n")
        run.commit = git_text(run.worktree, "rev-parse", "HEAD")


RESOLVE_STAGES: list[Stage] = [
    ("apply", stage_apply),
    ("record", stage_record),
    ("commit", stage_commit),
    ("gate", stage_gate),
]
GATE_ONLY_STAGES: list[Stage] = [("gate", stage_gate)]


def _check_clean(worktree: Path, report_rel: str) -> None:
    dirty = git_text(worktree, "status", "--porcelain", "--untracked-files=no", "--", ".", f":!{report_rel}")
    if dirty:
        first = dirty.splitlines()[0][3:]
        raise SyncError(
            f"{worktree} has uncommitted changes ({first}); commit or discard them before resolve"
        )


def resolve_branch(
    worktree: Path, decisions: Path | None = None, gate: GateFn | None = None
) -> ResolveResult:
    """Apply decisions on the sync branch, commit them (commit 2) and run ``gate``: all of it, or nothing.

    Raises SyncError (nothing changed) on bad input; AlreadyResolved when there is nothing to do.
    """
    worktree = Path(worktree).resolve()
    check_killed_run(worktree)
    report_dir = find_report_dir(worktree)
    worktree = report_dir.parents[1]
    report_rel = report_dir.relative_to(worktree).as_posix()
    with transaction(git_common_dir(worktree), "vime-sync resolve") as tx:
        source = Path(decisions) if decisions else report_dir / "decisions.json"
        answers = load_decisions(source)
        name = answers["window"]["name"]
        first, resolved = window_commits(worktree, report_dir.name)
        trusted = committed_decisions(worktree, resolved or first, f"{report_rel}/decisions.json")
        if resolved is not None:
            # a gate result of this resolve: committed after it (an earlier run's gate.json may be in the tree)
            gate_known = git_text(
                worktree, "log", "--format=%H", f"{resolved}..HEAD", "--", f"{report_rel}/gate.json"
            )
            if gate is None or gate_known:
                raise AlreadyResolved(
                    f"window {name} is already resolved (commit {resolved[:10]}); nothing to do"
                )
            run = ResolveRun(
                worktree, report_dir, report_rel, trusted, [], Overlay(worktree), [], [], gate, tx
            )
            run_stages(tx, GATE_ONLY_STAGES, run)
            head = git_text(worktree, "rev-parse", "HEAD")
            return ResolveResult(worktree, report_dir, head, {}, 0, 0, [], run.gate_passed, gate_only=True)
        run = plan_resolve(worktree, report_dir, trusted, answers, str(source), gate)
        run.tx = tx
        run_stages(tx, RESOLVE_STAGES, run)
    applied = dict(Counter(decision for _, decision in run.chosen))
    return ResolveResult(
        worktree, report_dir, run.commit, applied, 0, run.recorded, run.touched, run.gate_passed
    )


def plan_resolve(
    worktree: Path,
    report_dir: Path,
    trusted: dict[str, Any],
    answers: dict[str, Any],
    source: str,
    gate: GateFn | None,
) -> ResolveRun:
    """Every check of a resolve and every new file content, before the first write (``follow`` runs the
    same stages on its own PRs): the questions of commit 1 (``trusted``) with the ``answers``."""
    report_rel = report_dir.relative_to(worktree).as_posix()
    _check_clean(worktree, report_rel)
    questions = merge_answers(trusted, answers, source)
    chosen = choose(expand_sites(questions))  # a grouped question: one per site
    files = Overlay(worktree)
    touched = apply_decisions(files, report_rel, chosen)
    left = markers_left(worktree, trusted, files.read)
    if left:
        raise SyncError(
            f"markers remain after resolve in {', '.join(sorted(left))}; answer every hunk there (an edited text "
            "may keep markers): fix decisions.json"
        )
    return ResolveRun(worktree, report_dir, report_rel, trusted, questions, files, chosen, touched, gate)
