"""One Ray actor per vLLM engine: it owns the server process and is its control-plane client.

The actor starts the server under a guard (``process_guard``) so the server never outlives the
actor, even when the actor is killed with SIGKILL. ``start`` blocks until the server is healthy;
callers fire ``start.remote()`` on every engine first and ``ray.get`` them together, so engines
boot in parallel.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from vime.backends.vllm_utils.engine_client import EngineClient
from vime.backends.vllm_utils.server_process import ServerProcess, build_server_command, server_env

logger = logging.getLogger(__name__)

SLEEP_UNAVAILABLE = (
    "vLLM sleep/wake (memory offload) is not available on the CPU build; weights stay in memory"
)


def _bootable(path: str | None) -> bool:
    """A checkpoint vLLM can start from by itself: weights, config and tokenizer."""
    if path is None:
        return False
    directory = Path(path)
    has_tokenizer = (directory / "tokenizer.json").exists() or (directory / "tokenizer_config.json").exists()
    return (directory / "config.json").exists() and has_tokenizer and any(directory.glob("*.safetensors"))


class VLLMEngine:
    """A single vLLM server: start, stop, restart and every control call (wrapped by ``ray.remote``)."""

    def __init__(
        self,
        rank: int,
        model_path: str,
        host: str,
        port: int,
        server_args: list[str],
        log_dir: str,
        on_cpu: bool = True,
        env: dict[str, str] | None = None,
    ):
        self.rank = rank
        self.model_path = str(model_path)
        self.host = host
        self.port = port
        self.server_args = list(server_args)
        self.on_cpu = on_cpu
        self.log_path = Path(log_dir) / f"vllm_engine_{rank}_port{port}.log"
        self.env = server_env(env)
        self.url = f"http://{host}:{port}"
        self.client = EngineClient(self.url)
        self.process: ServerProcess | None = None
        self.weights_path: str | None = None  # the checkpoint the engine should hold (after restarts too)
        self.weight_version: str | None = None
        self.booted_from: str | None = None
        self.lora_adapter: tuple[str, str] | None = (
            None  # (name, path) served on top, reloaded after restarts
        )

    # ----- lifecycle --------------------------------------------------------------------------
    def start(self, timeout_s: float = 600.0) -> dict[str, Any]:
        """Launch the server and block until it is healthy and holds the latest synced weights.

        After a restart the engine must serve the last checkpoint given to
        ``update_weights_from_disk`` (and its version) before this returns, i.e. before it is
        registered with the router again. A complete checkpoint (config + tokenizer) is booted
        directly; a weights-only one (what a trainer exports) is reloaded into the base model.
        """
        boot_path = self.weights_path if _bootable(self.weights_path) else self.model_path
        cmd = build_server_command(boot_path, self.host, self.port, self.server_args)
        self.process = ServerProcess(cmd, self.log_path, self.env)
        started = time.monotonic()
        self.process.start()
        self.process.wait_healthy(self.url, timeout_s)
        if self.weights_path is not None and boot_path != self.weights_path:
            self.client.reload_weights_from_disk(self.weights_path)
        if self.lora_adapter is not None:
            self.client.update_lora_adapter(*self.lora_adapter, version=self.weight_version)
        elif self.weight_version is not None:
            self.client.update_weight_version(self.weight_version)
        self.booted_from = boot_path
        seconds = time.monotonic() - started
        logger.info("vLLM engine %d healthy at %s after %.1fs", self.rank, self.url, seconds)
        return {
            "rank": self.rank,
            "url": self.url,
            "start_seconds": seconds,
            "server_pid": self.process.server_pid,
            "booted_from": boot_path,
        }

    def restart(self, timeout_s: float = 600.0) -> dict[str, Any]:
        """Stop what is left of the server and start it again with the latest synced weights."""
        self.stop()
        return self.start(timeout_s)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    shutdown = stop

    def alive(self) -> bool:
        return self.process is not None and self.process.alive()

    def health(self, timeout_s: float = 10.0) -> bool:
        return self.alive() and self.client.health(timeout_s)

    def server_pid(self) -> int | None:
        return self.process.server_pid if self.process else None

    def kill_server(self) -> None:
        """Crash the server on purpose (SIGKILL to its process group): fault-tolerance tests use this."""
        if self.process is not None:
            self.process.kill_server()

    def info(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "url": self.url,
            "log": str(self.log_path),
            "weights_path": self.weights_path,
            "booted_from": self.booted_from,
        }

    def log_tail(self, lines: int = 40) -> str:
        return self.process.log_tail(lines) if self.process else ""

    # ----- control plane --------------------------------------------------------------------
    def generate(self, token_ids: list[int], sampling_params: dict, request_id: str | None = None) -> dict:
        return self.client.generate(token_ids, sampling_params, request_id)

    def pause(self, mode: str = "wait") -> None:
        self.client.pause(mode)

    def resume(self) -> None:
        self.client.resume()

    def abort(self, request_ids: list[str] | None = None) -> int:
        return self.client.abort(request_ids)

    def reset_prefix_cache(self) -> None:
        self.client.reset_prefix_cache()

    def update_weights_from_disk(
        self, path: str, version: str | None = None, pause_mode: str = "wait"
    ) -> float:
        """Reload weights from a checkpoint dir; remembered so a restarted engine comes back on them."""
        started = time.monotonic()
        self.client.update_weights_from_disk(path, version, pause_mode)
        self.weights_path = str(path)
        if version is not None:
            self.weight_version = str(version)
        return time.monotonic() - started

    def update_lora_adapter(
        self, name: str, path: str, version: str | None = None, pause_mode: str = "wait"
    ) -> float:
        """Serve base + the adapter in ``path`` from now on (remembered for restarts); returns seconds."""
        started = time.monotonic()
        self.client.update_lora_adapter(name, path, version, pause_mode)
        self.lora_adapter = (name, str(path))
        if version is not None:
            self.weight_version = str(version)
        return time.monotonic() - started

    def set_weights(self, path: str | None, version: str | None) -> None:
        """Record the checkpoint to load at the next (re)start, without touching a running server."""
        self.weights_path = str(path) if path is not None else None
        self.weight_version = str(version) if version is not None else None

    def update_weight_version(self, version: str) -> None:
        self.client.update_weight_version(version)
        self.weight_version = str(version)

    def get_weight_version(self) -> str | None:
        return self.client.weight_version()

    def weights_checksums(self) -> dict[str, str]:
        return self.client.weights_checksums()

    def sleep(self, level: int = 1) -> bool:
        """Release engine memory (GPU only); on the CPU, log that it is unavailable and return False."""
        if self.on_cpu:
            logger.warning(SLEEP_UNAVAILABLE)
            return False
        self.client.sleep(level)
        return True

    def wake_up(self, tags: list[str] | None = None) -> bool:
        if self.on_cpu:
            logger.warning(SLEEP_UNAVAILABLE)
            return False
        self.client.wake_up(tags)
        return True

    # ----- GPU weight transfer (vLLM's NCCL / IPC backends) -------------------------------------------
    def init_weight_transfer_engine(self, init_info: dict[str, Any]) -> None:
        self.client.init_weight_transfer_engine(init_info)

    def start_weight_update(self) -> None:
        self.client.start_weight_update()

    def update_weights(self, update_info: dict[str, Any]) -> None:
        self.client.update_weights(update_info)

    def finish_weight_update(self, version: str | None = None) -> None:
        self.client.finish_weight_update(version)
        if version is not None:
            self.weight_version = str(version)
