"""vllm-router in front of the engines: start it (under the same guard as engines) and keep its worker list.

The router is the registry of healthy engines: vime's generate requests read its worker list and go
to the engines directly (``--rollout-routing direct``) or through it (``router``); control calls go
to each engine directly. Engines are registered only once they are healthy (``/add_worker`` blocks
until the worker answers) and are removed while they restart, so neither path sends requests to a
dead engine for long.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import requests

from vime.backends.vllm_utils.server_process import EngineStartError, ServerProcess, server_env


class RouterClient:
    """The worker-list API of a running vllm-router at ``url``."""

    def __init__(self, url: str, timeout_s: float = 900.0):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def workers(self) -> list[str]:
        answer = requests.get(f"{self.url}/workers", timeout=30).json()
        return [worker["url"] for worker in answer.get("workers", [])]

    def add_worker(self, worker_url: str) -> None:
        response = requests.post(f"{self.url}/add_worker", params={"url": worker_url}, timeout=self.timeout_s)
        if response.status_code >= 300:
            raise RuntimeError(
                f"vllm-router refused worker {worker_url}: HTTP {response.status_code} {response.text[:200]}"
            )

    def remove_worker(self, worker_url: str) -> None:
        if worker_url in self.workers():
            requests.post(f"{self.url}/remove_worker", params={"url": worker_url}, timeout=60)

    def healthy(self) -> bool:
        try:
            return requests.get(f"{self.url}/health", timeout=5).status_code == 200
        except requests.RequestException:
            return False


class RouterProcess:
    """A vllm-router subprocess bound to ``host:port``; it dies with the process that started it."""

    def __init__(self, host: str, port: int, extra_args: list[str], log_dir: str):
        self.host, self.port = host, port
        self.url = f"http://{host}:{port}"
        cmd = [
            sys.executable,
            "-m",
            "vllm_router.launch_router",
            "--host",
            host,
            "--port",
            str(port),
            *extra_args,
        ]
        self.process = ServerProcess(cmd, Path(log_dir) / f"vllm_router_port{port}.log", server_env())
        self.client = RouterClient(self.url)

    def start(self, timeout_s: float = 60.0) -> float:
        started = time.monotonic()
        self.process.start()
        while not self.client.healthy():
            if not self.process.alive():
                raise EngineStartError(
                    f"vllm-router at {self.url} exited; log {self.process.log_path}:\n{self._errors()}"
                )
            if time.monotonic() - started > timeout_s:
                self.process.stop()
                raise EngineStartError(
                    f"vllm-router at {self.url} not up after {timeout_s:.0f}s:\n{self.process.log_tail()}"
                )
            time.sleep(0.2)
        return time.monotonic() - started

    def stop(self) -> None:
        self.process.stop()

    def _errors(self) -> str:
        """The lines of the router log that say what went wrong (its Rust backtraces are long)."""
        lines = self.process.log_tail(400).splitlines()
        wanted = [line for line in lines if "panicked" in line or "rror" in line or line.startswith("failed")]
        return "\n".join(wanted[-10:]) or "\n".join(lines[-20:])
