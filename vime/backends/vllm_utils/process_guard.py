"""Keep a server's whole process tree tied to the life of the process that started it.

Run as ``python -m vime.backends.vllm_utils.process_guard --parent-pid P --pid-file F -- cmd ...``.
The guard detaches (double fork, new session: Ray kills a dead actor's children and process group,
and the guard must outlive the actor to clean up after it), starts ``cmd`` in a new process group
(vLLM's API server forks an engine core and a worker; all stay in that group) and watches the
owner's pid. When the owner disappears — even by SIGKILL, which no cleanup handler sees — or the
guard gets SIGTERM/SIGINT, it kills the whole group. The server also gets PR_SET_PDEATHSIG, so
it dies if the guard itself is killed. When the server exits by itself, so does the guard.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time

_POLL_S = 0.2
_GRACE_S = 5.0


def kill_group(pgid: int, grace_s: float = _GRACE_S) -> None:
    """SIGTERM the group, then SIGKILL whatever is left after ``grace_s``."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(_POLL_S)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def process_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, IndexError):
        return False


def _die_with_parent() -> None:
    """In the server (before exec): SIGKILL me when the guard dies. Linux only; ignored elsewhere."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})  # blocked in the guard only
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass
    os.setsid()


def _detach(guard_pid_file: str | None) -> None:
    """Double fork: the guard is re-parented away from its starter and leads its own session."""
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    if guard_pid_file:
        with open(guard_pid_file, "w") as f:
            f.write(str(os.getpid()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--pid-file", default=None, help="Where to write the server's pid (= its group id).")
    parser.add_argument("--guard-pid-file", default=None, help="Where to write the guard's own pid.")
    parser.add_argument("--detach", action="store_true", help="Double-fork away from the starter first.")
    parser.add_argument("cmd", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        parser.error("no command given after --")

    if args.detach:
        _detach(args.guard_pid_file)
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    # Signals are taken synchronously (sigtimedwait below) so the log can name who sent them.
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    stop: dict = {}

    server = subprocess.Popen(cmd, preexec_fn=_die_with_parent)  # noqa: PLW1509 - the guard has one thread
    if args.pid_file:
        with open(args.pid_file, "w") as f:
            f.write(str(server.pid))
    while True:
        if _exited(server.pid):
            # Kill what is left of the group *before* reaping the server: while it is an unreaped
            # zombie its pid (= the group id) cannot be reused by an unrelated process.
            kill_group(server.pid, grace_s=1.0)  # leftovers of a crashed server (engine core, workers)
            code = server.wait()
            print(f"[vime process_guard] server exited with code {code}", file=sys.stderr, flush=True)
            return code
        if stop or not process_alive(args.parent_pid):
            if stop:
                why = f"signal {stop['signal']} from pid {stop['sender']}"
            else:
                why = f"owner pid {args.parent_pid} is gone"
            print(
                f"[vime process_guard] {why}: stopping server group {server.pid}", file=sys.stderr, flush=True
            )
            kill_group(server.pid)
            server.wait()
            return 0
        info = signal.sigtimedwait(stop_signals, _POLL_S)
        if info is not None:
            stop.update(signal=info.si_signo, sender=info.si_pid)


def _exited(pid: int) -> bool:
    """Whether our child ``pid`` has exited, without reaping it (WNOWAIT)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


if __name__ == "__main__":
    sys.exit(main())
