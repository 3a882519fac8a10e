"""Window and resolve as transactions: the complete result, or nothing at all.

Why: a sync that stops half-way (an exception, Ctrl-C, SIGTERM, a failing git hook) must not leave
a branch, a worktree, commits, cache entries or files behind, or the next run meets a dead end.
Each write registers its undo *before* it happens; when the run ends by any exception the undos
run newest first, with SIGINT/SIGTERM held back so a second Ctrl-C cannot cut the rollback short.
A lock file in the downstream's ``.git`` serialises runs on one downstream. Stages run through
``run_stages`` so other steps (e.g. a conformance check) slot in as one more named stage.
"""

from __future__ import annotations

import contextlib
import fcntl
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sync.model.errors import SyncError
from sync.window.journal import (
    Journal,
    drop,
    is_complete,
    pending,
    repair_command,
    replay,
    run_step,
    way_out,
)

LOCK_NAME = "vime-sync.lock"
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class LockHeld(SyncError):
    """Another vime-sync run holds the downstream's lock (it is alive: the kernel drops a dead one's)."""


class Interrupted(KeyboardInterrupt):
    """SIGTERM (or SIGINT) turned into an exception, so ``finally`` blocks and the rollback run."""


# Called with each stage's name just before it runs (fault-injection tests add to it).
BOUNDARY_HOOKS: list[Callable[[str], None]] = []

# Set by the vime-sync process (``sync.cli.run``): once a run has committed, the process only reports and exits, so
# SIGINT/SIGTERM are ignored from then on. A signal then would say "interrupted" or end the process
# by the signal while the complete result is in place. Library callers keep their own handlers.
_COMPLETE_MEANS_DONE = {"on": False}


def ignore_signals_after_commit(on: bool = True) -> None:
    """From the next committed transaction on, ignore SIGINT/SIGTERM (for a CLI process that then exits)."""
    _COMPLETE_MEANS_DONE["on"] = on


@dataclass
class Transaction:
    """The undo log of one run; ``undo(what, fn)`` or ``undo_step(kind, what, **args)`` before each write,
    ``stage(name)`` at each boundary. ``undo_step`` also writes the undo to the journal on disk, so that
    ``--repair`` can carry it out after a SIGKILL (``sync.window.journal``)."""

    command: str
    undos: list[tuple[str, Callable[[], None]]] = field(default_factory=list)
    failed_undos: list[str] = field(default_factory=list)
    journal: Journal | None = None

    def undo(self, what: str, fn: Callable[[], None]) -> None:
        self.undos.append((what, fn))

    def undo_step(self, kind: str, what: str, **args: Any) -> None:
        """Register an undo that a later process can replay (kinds: ``journal.UNDOS``)."""
        self.undos.append((what, lambda: run_step(kind, args)))
        if self.journal is not None:
            self.journal.add(kind, what, args)

    def backup(self, data: bytes) -> tuple[str, str | None]:
        """Keep a file's earlier bytes where ``--repair`` finds them: (journal folder, name)."""
        if self.journal is None:
            return "", None
        return str(self.journal.dir), self.journal.backup(data)

    def complete_when(self, repo: Path, branch: str, subject: str) -> None:
        """The run is complete once ``branch``'s tip has ``subject`` (a kill just after that commit
        leaves nothing to undo)."""
        if self.journal is not None:
            self.journal.doc["complete_if"] = {"repo": str(repo), "branch": branch, "subject": subject}

    def stage(self, name: str) -> None:
        if self.journal is not None:
            self.journal.stage(name)
        for hook in list(BOUNDARY_HOOKS):  # noqa: PERF101 - a copy: a hook may remove itself
            hook(name)

    def rollback(self) -> None:
        while self.undos:
            what, fn = self.undos.pop()
            try:
                fn()
            except Exception as exc:  # keep undoing the rest; say what could not be undone
                self.failed_undos.append(f"{what} ({exc})")


Stage = tuple[str, Callable[[Any], None]]


def run_stages(tx: Transaction, stages: Sequence[Stage], ctx: Any) -> None:
    """Run each named stage on the shared context, marking the boundary before it."""
    for name, fn in stages:
        tx.stage(name)
        fn(ctx)


def _raise_interrupted(signum: int, _frame: object) -> None:
    raise Interrupted(f"stopped by {signal.Signals(signum).name}")


@contextlib.contextmanager
def _signals_as_exceptions() -> Iterator[None]:
    """SIGTERM raises ``Interrupted`` (SIGINT already raises KeyboardInterrupt); main thread only."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_interrupted)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM back (delivered afterwards) while a rollback or a final write runs.

    Blocking them in this thread is not enough: the kernel then hands a signal to another thread (a
    progress spinner's), and Python runs the handler in the main thread all the same. So the Python
    handlers are swapped for ones that only note the signal, which is raised again at the end."""
    noted: list[int] = []
    try:
        previous = {signum: signal.signal(signum, lambda n, _f: noted.append(n)) for signum in _SIGNALS}
    except ValueError:  # not the main thread: Python delivers no signal here anyway
        previous = {}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)  # one blocked meanwhile lands in the noting handler
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(noted):
            signal.raise_signal(signum)


@contextlib.contextmanager
def run_lock(git_dir: Path, command: str) -> Iterator[Path]:
    """An exclusive lock on ``<git-dir>/vime-sync.lock`` (the kernel drops it if the process dies)."""
    path = git_dir / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise SyncError(
            f"cannot write the lock file {path} ({exc.strerror}); make {git_dir} writable"
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            raise LockHeld(
                f"another vime-sync run holds {path} ({holder}); wait for it to finish, then run again"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{command}, pid {os.getpid()}\n".encode(), 0)
        yield path
    finally:
        os.close(fd)


def end_children(before: set[Any]) -> None:
    """Stop multiprocessing children started since ``before`` (pool workers of an aborted run)."""
    for proc in multiprocessing.active_children():
        if proc in before:
            continue
        proc.terminate()
    for proc in multiprocessing.active_children():
        if proc in before:
            continue
        proc.join(2)
        if proc.is_alive():
            proc.kill()
            proc.join(2)


def check_no_pending(git_dir: Path) -> None:
    """Refuse to start while a killed run's undo log is waiting (the caller holds the run lock, so its
    writer is gone): one line with the way out."""
    doc = pending(git_dir)
    if doc is not None and is_complete(doc):
        drop(git_dir)  # killed just after its final commit: the result is complete
    elif doc is not None:
        raise SyncError(way_out(doc))


@contextlib.contextmanager
def transaction(git_dir: Path, command: str) -> Iterator[Transaction]:
    """Lock the downstream, turn SIGTERM into an exception, and roll back on any exception; a killed
    earlier run is refused with its way out."""
    tx = Transaction(command)
    children = set(multiprocessing.active_children())
    committed, settle = False, _COMPLETE_MEANS_DONE["on"]
    try:
        with run_lock(git_dir, command), _signals_as_exceptions():
            check_no_pending(git_dir)
            tx.journal = Journal(git_dir, command)
            try:
                yield tx
            except BaseException as exc:
                with signals_held():
                    end_children(children)
                    tx.rollback()
                    if not tx.failed_undos:
                        tx.journal.close()
                if tx.failed_undos:
                    raise SyncError(
                        f"{command} stopped ({_why(exc)}) and could not undo: {'; '.join(tx.failed_undos)}; "
                        f"fix that and run `{repair_command(tx.journal.doc)}` (or remove those by hand)"
                    ) from exc
                raise
            tx.journal.close()
            committed = True
            if settle:  # hold signals from the commit point until they are ignored
                signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    except KeyboardInterrupt:
        if not (committed and settle):
            raise
        # a signal just after the commit point: the result is complete, nothing to undo or report
    finally:
        if committed and settle:
            for signum in _SIGNALS:
                signal.signal(signum, signal.SIG_IGN)  # a pending one is discarded
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)


@contextlib.contextmanager
def transaction_series() -> Iterator[None]:
    """Several transactions in a row (``vime-sync follow``: one per PR). A commit point is then not the
    end of the process: Ctrl-C and SIGTERM must still stop the next transaction (SIGTERM as an
    exception between them too), and the after-commit mode of ``sync.cli.run`` applies only once the
    whole series is done (signals are ignored from there while the process reports and exits)."""
    settle = _COMPLETE_MEANS_DONE["on"]
    _COMPLETE_MEANS_DONE["on"] = False
    try:
        with _signals_as_exceptions():
            yield
    finally:
        _COMPLETE_MEANS_DONE["on"] = settle
    if settle:
        for signum in _SIGNALS:
            signal.signal(signum, signal.SIG_IGN)


def killed_run(git_dir: Path) -> str | None:
    """The way out of a killed run's leftovers, or None (none, or a run is alive and holds the lock)."""
    try:
        with run_lock(git_dir, "vime-sync (checking for a killed run)"):
            check_no_pending(git_dir)
    except LockHeld:
        return None
    except SyncError as exc:
        return str(exc)
    return None


def check_killed_run(where: Path) -> None:
    """Refuse to work on a branch a killed run left half-made (``status``, ``resolve``): one line with
    the way out. Outside a repository, the caller's own check says so."""
    from sync.gitio import GitError
    from sync.window.checks import git_common_dir

    try:
        git_dir = git_common_dir(Path(where).resolve())
    except (GitError, OSError):
        return
    line = killed_run(git_dir)
    if line is not None:
        raise SyncError(line)


def repair(git_dir: Path, command: str) -> tuple[dict[str, Any] | None, list[str]]:
    """Under the run lock, carry out the undo log that a killed run left (what its rollback would have
    done): (that log, or None when there was none; what was undone). A log whose run had made its final
    commit is only removed."""
    with run_lock(git_dir, command), signals_held():
        doc = pending(git_dir)
        if doc is None:
            return None, []
        if is_complete(doc):
            drop(git_dir)
            return doc, []
        done, failed = replay(git_dir, doc)
        if failed:
            raise SyncError(
                f"--repair could not undo: {'; '.join(failed)}; fix that and run `{repair_command(doc)}` again"
            )
        return doc, done


def _why(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
