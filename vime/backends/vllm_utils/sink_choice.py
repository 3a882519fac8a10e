"""Which weight sink a training rank feeds for ``--weight-sync ipc`` / ``nccl``, from typed options.

The driver builds :class:`WeightSyncConfig` once per run (the mode, and the engines' sleep around
training) and :class:`WeightPushOptions` once per update from the flags; each rank's
:class:`EngineSinks` keeps its engine clients and the NCCL group between updates and returns the
sink the options name (the senders themselves are in ``weight_transfer.py`` and ``ipc_views.py``):

- ``ipc``: vime's ``/vime/update_weights`` route when every engine has it (``--weight-sync-api
  auto``), else vLLM's weight-transfer routes, else ``/collective_rpc``; ``--weight-sync-api`` names
  one outright.
- ``nccl``: one broadcast group per set of engines, made at the first update and kept.
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vime.backends.vllm_utils.engine_client import EngineClient
from vime.utils.args.defaults import config_from_args

DEFAULT_BUCKET_BYTES = 512 << 20
GPU_WEIGHT_SYNC_MODES = ("ipc", "nccl")


@dataclass(frozen=True)
class WeightPushOptions:
    """How the ranks push weights into running engines, as the flags say (built once by the driver)."""

    mode: str  # --weight-sync: ipc or nccl
    bucket_bytes: int = DEFAULT_BUCKET_BYTES  # --update-weight-buffer-size
    api: str = "auto"  # --weight-sync-api (ipc only)
    engine_world_size: int = 1  # --rollout-num-gpus-per-engine (nccl ranks per engine)
    pause_mode: str = "wait"  # what the engines do with requests in flight (wait, or keep them)

    @classmethod
    def from_args(cls, args: Namespace, pause_mode: str = "wait") -> WeightPushOptions:
        if args.weight_sync not in GPU_WEIGHT_SYNC_MODES:
            raise ValueError(f"--weight-sync {args.weight_sync} does not push into engines: use ipc or nccl")
        return cls(
            mode=args.weight_sync,
            bucket_bytes=int(args.update_weight_buffer_size or DEFAULT_BUCKET_BYTES),
            api=args.weight_sync_api or "auto",
            engine_world_size=int(args.rollout_num_gpus_per_engine or 1),
            pause_mode=pause_mode,
        )


@dataclass(frozen=True)
class WeightSyncConfig:
    """What the driver's weight updates and the engines' sleep follow, built once per run from ``args``
    (after validation, which makes ``--weight-sync auto`` concrete)."""

    mode: str = "auto"  # --weight-sync
    offload_rollout: bool = False  # --offload-rollout: the engines sleep while training runs
    sleep_level: int = 1  # --rollout-sleep-level
    fully_async: bool = False  # --fully-async: the async producer learns each version pushed

    @classmethod
    def from_args(cls, args: Any) -> WeightSyncConfig:
        return config_from_args(
            cls,
            args,
            dests={
                "mode": "weight_sync",
                "offload_rollout": ("offload_rollout", bool),
                "sleep_level": ("rollout_sleep_level", int),
            },
        )

    @property
    def pushes_to_engines(self) -> bool:
        """The ranks send the weights straight into the engines (ipc / nccl), not through a directory."""
        return self.mode in GPU_WEIGHT_SYNC_MODES


def ipc_api(requested: str, clients: list[EngineClient]) -> str:
    """The IPC route to use: the one asked for, or (``auto``) vime's when every engine has it, then
    vLLM's weight-transfer routes, then ``/collective_rpc`` (vime's worker extension)."""
    from vime.backends.vllm_utils.weight_transfer import has_weight_transfer_api

    if requested != "auto":
        return requested
    if all(c.has_vime_routes() for c in clients):
        return "vime"
    return "weight-transfer" if has_weight_transfer_api(clients[0].routes()) else "collective-rpc"


class NullSink:
    """The sink of ranks that take part in the gathers but send nothing."""

    buckets = 0

    def begin(self, plan) -> None:
        pass

    def send(self, metas, flat) -> None:
        pass

    def finish(self) -> None:
        pass


class EngineSinks:
    """One rank's engine clients and NCCL group, kept between updates; picks the sink per update."""

    def __init__(self) -> None:
        self._clients: dict[str, EngineClient] = {}
        self._nccl_key: tuple[str, ...] | None = None
        self._nccl = None

    def clients(self, urls: list[str]) -> list[EngineClient]:
        self._clients = {u: self._clients.get(u) or EngineClient(u) for u in urls}
        return [self._clients[u] for u in urls]

    def choose(
        self,
        options: WeightPushOptions,
        clients: list[EngineClient],
        master_address: Callable[[], tuple[str, int]],
    ):
        """The sink for ``options.mode``; ``master_address`` gives this rank's address and a free port
        (the NCCL group's rendezvous, asked for only when a group is made)."""
        from vime.backends.vllm_utils.ipc_views import VimeIpcSink
        from vime.backends.vllm_utils.weight_transfer import IpcBucketSink, NcclBucketSink, nccl_trainer_group

        if options.mode == "ipc":
            api = ipc_api(options.api, clients)
            # vime's route: storages not kept open, a colocated trainer offloads (frees) them between updates
            return VimeIpcSink(clients, keep=False) if api == "vime" else IpcBucketSink(clients, api)
        if options.mode == "nccl":
            key = tuple(c.url for c in clients)
            if self._nccl_key != key:
                addr, port = master_address()
                group = nccl_trainer_group(clients, addr, port, options.engine_world_size)
                self._nccl_key, self._nccl = key, NcclBucketSink(clients, group)
            return self._nccl
        raise ValueError(f"no engine weight sink for --weight-sync {options.mode}: use ipc or nccl")
