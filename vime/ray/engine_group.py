"""The set of vLLM engines a RolloutManager drives: Ray actors it started plus external servers.

Engines vime starts are ``VLLMEngine`` Ray actors on ports allocated up front (no collisions);
all are fired at once and awaited together. External engines (``--rollout-external-engine-addrs``)
are plain HTTP clients: vime does not start, restart or stop them. Control calls fan out to every
engine directly.
"""

from __future__ import annotations

import contextlib
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, get_args

import ray

from vime.backends.vllm_utils.engine_actor import VLLMEngine
from vime.backends.vllm_utils.engine_client import EngineClient
from vime.utils.http_utils import allocate_ports

logger = logging.getLogger(__name__)

# The control calls a group fans out: methods of the VLLMEngine actor, and of ExternalEngine below,
# by the same names (tests/test_engine_group_methods.py checks both have each one).
ControlMethod = Literal[
    "health",
    "pause",
    "resume",
    "abort",
    "reset_prefix_cache",
    "update_weights_from_disk",
    "update_lora_adapter",
    "sleep",
    "wake_up",
    "get_weight_version",
    "alive",
    "kill_server",
    "stop",
]
CONTROL_METHODS: frozenset[str] = frozenset(get_args(ControlMethod))


class ExternalEngine(EngineClient):
    """An engine started elsewhere (``--rollout-external-engine-addrs``), with the control methods
    of a VLLMEngine actor: vime talks to it but does not manage its process or its memory."""

    def sleep(self, level: int = 1) -> bool:
        logger.warning("sleep is not sent to external engine %s: vime does not manage its memory", self.url)
        return False

    def wake_up(self, tags: list[str] | None = None) -> bool:
        logger.warning("wake_up is not sent to external engine %s: vime does not manage its memory", self.url)
        return False

    def get_weight_version(self) -> str | None:
        return self.weight_version()

    def alive(self) -> bool:
        return self.health()

    def kill_server(self) -> None:
        """Not ours to kill."""

    def stop(self) -> None:
        """Not ours to stop."""


def _control(method: str) -> str:
    if method not in CONTROL_METHODS:
        raise ValueError(
            f"{method!r} is not an engine control call; one of {', '.join(sorted(CONTROL_METHODS))}"
        )
    return method


class EngineGroup:
    def __init__(
        self,
        model_path: str,
        num_engines: int,
        server_args: list[str],
        log_dir: str,
        *,
        host: str = "127.0.0.1",
        base_port: int = 15000,
        on_cpu: bool = True,
        num_gpus_per_engine: float = 0,
        external_addrs: list[str] | None = None,
        start_timeout_s: float = 600.0,
        placement_group: Any = None,
        bundle_indices: list[int] | None = None,
        gpu_share: float | None = None,
        env: dict[str, str] | None = None,
    ):
        if num_engines < 0:
            raise ValueError(f"--rollout-num-engines is {num_engines}: give 0 or more")
        self.model_path = model_path
        self.server_args = server_args
        self.log_dir = log_dir
        self.host = host
        self.on_cpu = on_cpu
        self.num_gpus_per_engine = num_gpus_per_engine
        self.start_timeout_s = start_timeout_s
        # GPU engines sit in the run's placement group: engine r on bundle_indices[r * gpus per engine],
        # taking a share of that GPU when colocated with training (gpu_share), else the whole GPU
        self.placement_group = placement_group
        self.bundle_indices = list(bundle_indices or [])
        self.gpu_share = gpu_share
        self.env = dict(env or {})
        self.ports = allocate_ports(
            num_engines, start=base_port, host=host, spread=5000 if num_engines else 0
        )
        self.actors: list[Any] = [self._make_actor(rank, port) for rank, port in enumerate(self.ports)]
        self.external = [ExternalEngine(_as_url(addr)) for addr in external_addrs or []]

    def _make_actor(self, rank: int, port: int):
        options: dict[str, Any] = {
            "num_cpus": 0,
            "num_gpus": self.num_gpus_per_engine,
            "max_concurrency": 16,
            "name": None,
        }
        if self.placement_group is not None and not self.on_cpu and self.bundle_indices:
            from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

            per_engine = max(1, int(self.num_gpus_per_engine or 1))
            options["num_gpus"] = self.gpu_share if self.gpu_share else 1
            options["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
                placement_group=self.placement_group,
                placement_group_bundle_index=self.bundle_indices[
                    (rank * per_engine) % len(self.bundle_indices)
                ],
            )
        cls = ray.remote(VLLMEngine).options(**options)
        return cls.remote(
            rank,
            self.model_path,
            self.host,
            port,
            self.server_args,
            self.log_dir,
            self.on_cpu,
            self.env or None,
        )

    # ----- lifecycle --------------------------------------------------------------------------
    def start(self) -> list[dict[str, Any]]:
        """Start every engine at once, then wait for all of them together."""
        refs = [actor.start.remote(self.start_timeout_s) for actor in self.actors]
        try:
            infos = ray.get(refs)
        except Exception:
            self.stop()
            raise
        for client in self.external:
            if not client.health():
                raise RuntimeError(f"external vLLM engine {client.url} is not healthy (GET /health failed)")
        return infos

    def replace_actor(self, rank: int):
        """A fresh actor on the same port for an engine whose actor died; returns it (not started)."""
        with contextlib.suppress(Exception):
            ray.kill(self.actors[rank])
        self.actors[rank] = self._make_actor(rank, self.ports[rank])
        return self.actors[rank]

    def stop(self) -> None:
        refs = [actor.stop.remote() for actor in self.actors]
        for ref in refs:
            try:
                ray.get(ref, timeout=60)
            except Exception as exc:  # a dead actor took its server with it (guard)
                logger.warning("stopping an engine: %s", exc)
        for actor in self.actors:
            with contextlib.suppress(Exception):
                ray.kill(actor)

    # ----- addressing ---------------------------------------------------------------------------
    @property
    def owned_urls(self) -> list[str]:
        return [f"http://{self.host}:{port}" for port in self.ports]

    @property
    def urls(self) -> list[str]:
        return self.owned_urls + [client.url for client in self.external]

    def __len__(self) -> int:
        return len(self.actors) + len(self.external)

    # ----- control fan-out ------------------------------------------------------------------------
    def call(self, method: ControlMethod, *args: Any, **kwargs: Any) -> list[Any]:
        """Call ``method`` on every engine (actors in parallel via Ray, external ones via threads)."""
        name = _control(method)
        refs = [getattr(actor, name).remote(*args, **kwargs) for actor in self.actors]
        external_results: list[Any] = []
        if self.external:
            with ThreadPoolExecutor(len(self.external)) as pool:
                external_results = list(pool.map(lambda c: getattr(c, name)(*args, **kwargs), self.external))
        return ray.get(refs) + external_results

    def call_each(self, method: ControlMethod, *args: Any, timeout_s: float | None = None) -> list[Any]:
        """``method`` on every engine vime started; each entry is its result or the exception it raised.

        Unlike :meth:`call`, one dead engine does not hide what the others did: the caller can
        recover that engine alone (fault tolerance) or name it (without).
        """
        name = _control(method)
        refs = [getattr(actor, name).remote(*args) for actor in self.actors]
        results: list[Any] = []
        for ref in refs:
            try:
                results.append(ray.get(ref, timeout=timeout_s))
            except Exception as exc:  # RayActorError, EngineControlError from the actor, timeout
                results.append(exc)
        for client in self.external:
            results.append(getattr(client, name)(*args))
        return results

    def log_path(self, rank: int) -> str:
        return f"{self.log_dir}/vllm_engine_{rank}_port{self.ports[rank]}.log"


def _as_url(addr: str) -> str:
    return addr if addr.startswith("http") else f"http://{addr}"
