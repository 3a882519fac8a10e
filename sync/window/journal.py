"""A run's undo log on disk, so that a run killed by SIGKILL (no handler, no rollback) still has a way out.

Why: the transaction undoes everything on an exception or a catchable signal, but SIGKILL (the OOM
killer, ``kill -9``, a CI timeout) stops the process between two writes. Each undo that a later
process can carry out is therefore also written here, in the downstream's ``.git``, *before* the
write it undoes: ``<git-dir>/vime-sync/journal/journal.json`` (plus the earlier bytes of each file a
resolve overwrites). A finished run, or one rolled back in full, removes it. The next run finds the
journal (the lock proves its writer is gone), prints one line with the way out, and ``--repair``
replays the undos, newest first, exactly as the rollback would have.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sync.gitio import GitError, git, git_text
from sync.window.worktree import branch_exists

JOURNAL_DIR = "vime-sync/journal"
JOURNAL_FILE = "journal.json"


def journal_dir(git_dir: Path) -> Path:
    return git_dir / JOURNAL_DIR


class Journal:
    """The persistent half of a transaction's undo log (one per run; the run lock serialises runs)."""

    def __init__(self, git_dir: Path, command: str) -> None:
        self.dir = journal_dir(git_dir)
        self.doc: dict[str, Any] = {
            "command": command, "pid": os.getpid(), "stage": "", "steps": [], "dir": str(self.dir),
        }  # fmt: skip
        self.written = False

    def _save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / f"{JOURNAL_FILE}.tmp"
        tmp.write_text(json.dumps(self.doc, indent=1))
        tmp.replace(self.dir / JOURNAL_FILE)  # whole or not at all
        self.written = True

    def add(self, kind: str, what: str, args: dict[str, Any]) -> None:
        self.doc["steps"].append({"kind": kind, "what": what, "args": args})
        self._save()

    def backup(self, data: bytes) -> str:
        """Keep ``data`` (a file's earlier bytes) beside the journal; return its name there."""
        self.dir.mkdir(parents=True, exist_ok=True)
        name = f"backup-{len(self.doc['steps'])}"
        (self.dir / name).write_bytes(data)
        return name

    def stage(self, name: str) -> None:
        self.doc["stage"] = name
        if self.written:
            self._save()

    def close(self) -> None:
        """The run finished, or was rolled back in full: nothing is left to undo."""
        if self.dir.exists():
            drop(self.dir.parent.parent)
        self.written = False


def pending(git_dir: Path) -> dict[str, Any] | None:
    """The journal a killed run left (None: there is none, or it has nothing to undo)."""
    path = journal_dir(git_dir) / JOURNAL_FILE
    if not path.is_file():
        if journal_dir(git_dir).exists():
            drop(git_dir)  # killed before its first entry
        return None
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        doc = {"command": "vime-sync", "pid": "?", "stage": "?", "steps": [], "unreadable": True}
    if not doc.get("steps") and not doc.get("unreadable"):
        drop(git_dir)
        return None
    return doc


# --- the undos, as data: the rollback of a live run and --repair run the same code ------------------


def admin_dirs(repo: Path, path: Path) -> list[Path]:
    """Git's records of the worktree at ``path`` (``<common .git>/worktrees/<name>``), also half-written
    ones: ``git worktree add`` makes the folder and its ``locked`` file before ``gitdir``, and neither
    ``prune`` nor ``worktree remove`` takes a locked record whose worktree is not complete."""
    common = Path(git_text(repo, "rev-parse", "--git-common-dir"))
    common = common if common.is_absolute() else (repo / common).resolve()
    found = []
    for admin in sorted((common / "worktrees").glob("*")):
        gitdir = admin / "gitdir"
        if gitdir.is_file():
            with contextlib.suppress(OSError):
                if Path(gitdir.read_text().strip()).parent.resolve() == path.resolve():
                    found.append(admin)
        elif admin.name.rstrip("0123456789") == path.name:  # made, killed before it named its worktree
            found.append(admin)
    return found


def undo_worktree(repo: str, branch: str, path: str, made: list[str] | tuple[str, ...] = ()) -> None:
    """Remove a sync worktree, git's record of it and its branch, even half-made (``git worktree add``
    killed midway), and the folders above it that the run made."""
    repo_p, path_p = Path(repo), Path(path)
    for admin in admin_dirs(repo_p, path_p):
        shutil.rmtree(admin)
    shutil.rmtree(path_p, ignore_errors=True)
    for folder in made:  # deepest first, only if left empty
        with contextlib.suppress(OSError):
            Path(folder).rmdir()
    git(repo_p, "worktree", "prune")
    if branch_exists(repo_p, branch):
        git(repo_p, "branch", "-D", branch)


def undo_restore(journal: str, path: str, backup: str | None, mode: int | None, made: list[str]) -> None:
    """Put one file back as it was (or remove it, and the folders its write made)."""
    target = Path(path)
    old = (Path(journal) / backup).read_bytes() if backup is not None else None
    now = target.read_bytes() if target.is_file() and not target.is_symlink() else None
    if now == old and (old is None or mode is None or target.stat().st_mode & 0o7777 == mode):
        return  # never written, or already back
    if old is None:
        target.unlink(missing_ok=True)
        for folder in made:  # deepest first: only the ones left empty
            with contextlib.suppress(OSError):
                Path(folder).rmdir()
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink():
        target.unlink()
    target.write_bytes(old)
    if mode is not None:
        target.chmod(mode)


def undo_reset(worktree: str, before: str) -> None:
    """Move the branch back to ``before``, only if a commit was made (or a failed one left paths staged)."""
    wt = Path(worktree)
    moved = git_text(wt, "rev-parse", "HEAD") != before
    staged = git(wt, "diff", "--cached", "--name-only", before).strip()
    if moved or staged:
        git(wt, "reset", "-q", "--mixed", before)


def undo_chmod(path: str, mode: int) -> None:
    target = Path(path)
    if target.is_file() and target.stat().st_mode & 0o7777 != mode:
        target.chmod(mode)


UNDOS: dict[str, Callable[..., None]] = {
    "worktree": undo_worktree,
    "restore": undo_restore,
    "reset": undo_reset,
    "chmod": undo_chmod,
}


def run_step(kind: str, args: dict[str, Any]) -> None:
    UNDOS[kind](**args)


def replay(git_dir: Path, doc: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Carry out a killed run's undos, newest first: (what was undone, what could not be)."""
    done, failed = [], []
    for step in reversed(doc.get("steps", [])):
        try:
            run_step(step["kind"], step["args"])
            done.append(step["what"])
        except Exception as exc:  # keep going; report the rest
            failed.append(f"{step['what']} ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})")
    sweep_cache_temp_files(git_dir)
    if not failed:
        drop(git_dir)
    return done, failed


def sweep_cache_temp_files(git_dir: Path) -> None:
    """Half-written translation cache entries of dead processes (``<entry>.<pid>-<uuid>.tmp``)."""
    for tmp in (git_dir / "vime-sync-cache").glob("*/*/*.tmp"):
        pid = tmp.name.rsplit(".", 2)[-2].split("-", 1)[0] if tmp.name.count(".") >= 2 else ""
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            tmp.unlink(missing_ok=True)


def is_complete(doc: dict[str, Any]) -> bool:
    """The killed run had made its final commit (it died just after): nothing to undo."""
    probe = doc.get("complete_if")
    if not probe:
        return False
    repo = Path(probe["repo"])
    try:
        subject = git_text(repo, "log", "-1", "--format=%s", f"refs/heads/{probe['branch']}")
    except GitError:
        return False
    return subject == probe["subject"]


def drop(git_dir: Path) -> None:
    """Remove the journal (and ``<.git>/vime-sync`` when nothing else is kept there)."""
    shutil.rmtree(journal_dir(git_dir), ignore_errors=True)
    with contextlib.suppress(OSError):
        journal_dir(git_dir).parent.rmdir()


def repair_command(doc: dict[str, Any]) -> str:
    """The command that replays ``doc``: ``resolve --repair --worktree W`` for a resolve, ``follow --repair``
    for a follow (it goes on from there), else ``window --repair --downstream D`` (any run's journal)."""
    command = str(doc.get("command", "vime-sync window"))
    steps = doc.get("steps", [])
    if command.endswith("resolve"):
        worktrees = [s["args"]["worktree"] for s in steps if s["kind"] == "reset"]
        where = f" --worktree {worktrees[0]}" if worktrees else ""
        return f"vime-sync resolve --repair{where}"
    repos = [s["args"]["repo"] for s in steps if s["kind"] == "worktree"]
    git_dir = Path(doc["dir"]).parents[1] if doc.get("dir") else None
    down = repos[0] if repos else (git_dir.parent if git_dir is not None and git_dir.name == ".git" else None)
    verb = "follow" if command.endswith("follow") else "window"
    return f"vime-sync {verb} --repair" + (f" --downstream {down}" if down else "")


def _by_hand(doc: dict[str, Any], tree: dict[str, str]) -> list[str]:
    """The commands that remove what is left of a killed window's worktree and branch, as they stand."""
    repo, path = Path(tree["repo"]), Path(tree["path"])
    gone = [str(p) for p in (path, *admin_dirs(repo, path)) if p.exists()]
    commands = [f"rm -rf {' '.join(gone)}"] if gone else []
    if branch_exists(repo, tree["branch"]):
        commands.append(f"git -C {repo} branch -D {tree['branch']}")
    return [*commands, f"rm -r {doc.get('dir', JOURNAL_DIR)}"]


def way_out(doc: dict[str, Any]) -> str:
    """One line: what a killed run left, the command that removes it, and the same by hand where git can."""
    command = doc.get("command", "vime-sync")
    where = f"in stage '{doc['stage']}' " if doc.get("stage") else ""
    if doc.get("unreadable"):
        return (
            f"a {command} run was killed and its undo log (.git/{JOURNAL_DIR}) is unreadable; check the sync "
            f"branch and worktree by hand, then remove .git/{JOURNAL_DIR}"
        )
    steps = doc.get("steps", [])
    trees = [s["args"] for s in steps if s["kind"] == "worktree"]
    files = [s for s in steps if s["kind"] in ("restore", "chmod")]
    left = []
    if trees:
        left.append(f"branch {trees[0]['branch']} and worktree {trees[0]['path']} half-made")
    if files:
        left.append(f"{len(files)} rewritten file{'s' * (len(files) != 1)}")
    if any(s["kind"] == "reset" for s in steps):
        left.append("possibly a commit")
    by_hand = f" (by hand: {'; '.join(_by_hand(doc, trees[0]))})" if trees and not files else ""
    return (
        f"a `{command}` run (pid {doc.get('pid', '?')}) was killed {where}before it finished, leaving "
        f"{' and '.join(left) or 'changes'}; run `{repair_command(doc)}` to undo that{by_hand}, then run it again"
    )
