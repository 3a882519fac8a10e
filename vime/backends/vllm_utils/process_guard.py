"""Keep a server's whole process tree tied to the life of the process that started it.

Run as ``python -m vime.backends.vllm_utils.process_guard --parent-pid P --pid-file F -- cmd ...``.
The guard starts ``cmd`` in a new process group (vLLM's API server forks an engine core and a
worker; all stay in that group), then watches its own parent. When the parent disappears — even by
SIGKILL, which no cleanup handler sees — or the guard gets SIGTERM/SIGINT, it kills the whole
group. When the server exits by itself the guard exits with the server's code.
"""

from __future__ import annotations

import argparse
import contextlib
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--pid-file", default=None, help="Where to write the server's pid (= its group id).")
    parser.add_argument("cmd", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        parser.error("no command given after --")

    stop = {"requested": False}

    def on_signal(signum, frame):  # noqa: ARG001
        stop["requested"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    server = subprocess.Popen(cmd, start_new_session=True)
    if args.pid_file:
        with open(args.pid_file, "w") as f:
            f.write(str(server.pid))
    while True:
        code = server.poll()
        if code is not None:
            kill_group(server.pid, grace_s=1.0)  # leftovers of a crashed server (engine core, workers)
            return code
        if stop["requested"] or os.getppid() != args.parent_pid:
            kill_group(server.pid)
            server.wait()
            return 0
        time.sleep(_POLL_S)


if __name__ == "__main__":
    sys.exit(main())
