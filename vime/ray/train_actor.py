"""Training ranks as Ray actors, and the group the training loop drives.

Each :class:`TrainRayActor` is one data-parallel rank holding a backend (vime.backends.base);
:class:`TrainGroup` starts them, joins them into one process group, fans calls out and
pushes weights to the rollout engines the way ``--weight-sync`` says (vime/utils/args/weight_sync.py):
``disk`` (a Hugging Face dir the engines reload, see the RolloutManager's ``update_weights_from_disk``;
the CPU path), ``ipc`` (CUDA IPC buckets into engines on the same GPU) or ``nccl`` (broadcast to engines
on other GPUs); the last two go from the ranks straight to the engines' HTTP control plane
(vime/backends/vllm_utils/weight_transfer.py).
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import tempfile
import time
from argparse import Namespace
from pathlib import Path
from typing import Any

import ray

from vime.ray.placement_group import PlacementSlice
from vime.utils.args.defaults import flag_value

logger = logging.getLogger(__name__)

COLOCATED_TRAIN_GPU_SHARE = 0.4


@ray.remote
class TrainRayActor:
    """One rank: joins the process group, then forwards to its backend."""

    def __init__(self, args: Namespace, rank: int, world_size: int) -> None:
        self.args = args
        self.rank = rank
        self.world_size = world_size
        self.backend = None

    def master_address(self) -> tuple[str, int]:
        with socket.socket() as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
        return ray.util.get_node_ip_address(), port

    def init(self, master_addr: str, master_port: int) -> int:
        import torch
        import torch.distributed as dist

        from vime.backends.factory import make_backend

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
        torch.set_num_threads(max(1, int(os.environ.get("VIME_TRAIN_THREADS", os.cpu_count() or 1))))
        # env:// for backends that join the group themselves (Megatron), even with one rank; Ray gives
        # each rank only its own GPU, so it is device 0 of this process
        os.environ.update(
            MASTER_ADDR=master_addr,
            MASTER_PORT=str(master_port),
            RANK=str(self.rank),
            WORLD_SIZE=str(self.world_size),
            LOCAL_RANK="0",
        )
        if self.world_size > 1:
            backend = self.args.distributed_backend or ("nccl" if torch.cuda.is_available() else "gloo")
            dist.init_process_group(backend, rank=self.rank, world_size=self.world_size)
        self.backend = make_backend(self.args, self.rank, self.world_size)
        return self.backend.init()

    def train(self, rollout_id: int, rollout_data: dict[str, list]) -> dict[str, float]:
        from vime.backends.train_data import TrainBatch

        return self.backend.train(rollout_id, TrainBatch.from_rollout_data(rollout_data))

    def compute_logprobs(self, rollout_data: dict[str, list]) -> list[list[float]]:
        from vime.backends.train_data import TrainBatch

        return [t.tolist() for t in self.backend.compute_logprobs(TrainBatch.from_rollout_data(rollout_data))]

    def export_weights(self, dest: str) -> str | None:
        path = self.backend.export_weights(Path(dest))
        return str(path) if path is not None else None

    def send_weights_to_engines(
        self, mode: str, urls: list[str], version: str, options: dict[str, Any]
    ) -> dict[str, float]:
        """``ipc`` / ``nccl``: every rank calls this (gathers are collective); ranks given ``urls`` drive
        the engines: pause, send the buckets, reset prefix caches, tag the version, resume."""
        from vime.backends.vllm_utils.ipc_views import VimeIpcSink
        from vime.backends.vllm_utils.weight_transfer import (
            IpcBucketSink,
            has_weight_transfer_api,
            push_weights,
        )

        bucket_bytes = int(options.get("bucket_bytes") or 512 << 20)
        if not urls:
            self.backend.send_weights(_NullSink(), bucket_bytes)
            return {}
        clients = self._clients(urls)
        if mode == "ipc":
            api = options.get("api") or "auto"
            if api == "auto" and all(c.has_vime_routes() for c in clients):
                api = "vime"
            elif api == "auto":
                api = "weight-transfer" if has_weight_transfer_api(clients[0].routes()) else "collective-rpc"
                if api == "weight-transfer" and not options.get("engines_have_ipc_backend", True):
                    api = "collective-rpc"
            # vime's route: storages not kept open, a colocated trainer offloads (frees) them between updates
            sink = VimeIpcSink(clients, keep=False) if api == "vime" else IpcBucketSink(clients, api)
        elif mode == "nccl":
            sink = self._nccl_sink(clients, options)
        else:
            raise ValueError(f"send_weights_to_engines does not do --weight-sync {mode}")
        sent = {"bytes": 0}

        def send() -> None:
            sent["bytes"] = self.backend.send_weights(sink, bucket_bytes)

        seconds = push_weights(clients, send, version, options.get("pause_mode", "wait"), sink=sink)
        return {f"weight_sync/{k}_s": v for k, v in seconds.items()} | {
            "weight_sync/bytes": float(sent["bytes"]),
            "weight_sync/buckets": float(getattr(sink, "buckets", 0)),
        }

    def _clients(self, urls: list[str]):
        from vime.backends.vllm_utils.engine_client import EngineClient

        cached = getattr(self, "_engine_clients", {})
        self._engine_clients = {u: cached.get(u) or EngineClient(u) for u in urls}
        return [self._engine_clients[u] for u in urls]

    def _nccl_sink(self, clients, options: dict[str, Any]):
        """One NCCL group per set of engines, made at the first update and kept."""
        from vime.backends.vllm_utils.weight_transfer import NcclBucketSink, nccl_trainer_group

        key = tuple(c.url for c in clients)
        if getattr(self, "_nccl_key", None) != key:
            addr, port = self.master_address()
            group = nccl_trainer_group(clients, addr, port, int(options.get("engine_world_size") or 1))
            self._nccl_key, self._nccl = key, NcclBucketSink(clients, group)
        return self._nccl

    def save(self, rollout_id: int) -> None:
        self.backend.save(rollout_id)

    def offload(self) -> None:
        self.backend.offload()

    def onload(self) -> None:
        self.backend.onload()


class _NullSink:
    """The sink of ranks that take part in the gathers but send nothing."""

    def begin(self, plan) -> None:
        pass

    def send(self, metas, flat) -> None:
        pass

    def finish(self) -> None:
        pass


class TrainGroup:
    """All training ranks; calls go to every rank and rank 0's answer is returned."""

    def __init__(self, args: Namespace, placement: PlacementSlice) -> None:
        self.args = args
        world_size = args.actor_num_nodes * args.actor_num_gpus_per_node
        self.actors = []
        for rank in range(world_size):
            options: dict[str, Any] = {"num_cpus": 0}
            if placement.pg is not None:
                from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

                options |= {
                    # colocated: the engines take a share of the same bundle (slime uses 0.4 / 0.2)
                    "num_gpus": COLOCATED_TRAIN_GPU_SHARE if args.colocate else 1,
                    "scheduling_strategy": PlacementGroupSchedulingStrategy(
                        placement_group=placement.pg,
                        placement_group_bundle_index=placement.bundle_indices[rank],
                    ),
                }
            self.actors.append(TrainRayActor.options(**options).remote(args, rank, world_size))
        self.weights_root = Path(args.update_weight_disk_dir or tempfile.mkdtemp(prefix="vime-weights-"))
        self.weight_version = 0

    def init(self) -> int:
        """Build every rank's model; returns the rollout id to start from (from ``--load``)."""
        addr, port = ray.get(self.actors[0].master_address.remote())
        starts = ray.get([actor.init.remote(addr, port) for actor in self.actors])
        return starts[0]

    def async_train(self, rollout_id: int, rollout_data) -> list[ray.ObjectRef]:
        return [actor.train.remote(rollout_id, rollout_data) for actor in self.actors]

    def train(self, rollout_id: int, rollout_data) -> dict[str, float]:
        return ray.get(self.async_train(rollout_id, rollout_data))[0]

    def compute_logprobs(self, rollout_data) -> list[list[float]]:
        """Every rank computes; each returns all samples' log-probs (no sharding here)."""
        return ray.get([actor.compute_logprobs.remote(rollout_data) for actor in self.actors])[0]

    def save(self, rollout_id: int) -> None:
        ray.get([actor.save.remote(rollout_id) for actor in self.actors])
        if getattr(self.args, "save_hf", None):
            self.save_hf(rollout_id)

    def save_hf(self, rollout_id: int) -> Path:
        """``--save-hf``: this step as a Hugging Face model directory (``vime/utils/hf_copy.py``)."""
        from vime.utils.hf_copy import hf_copy_path, publish, staging_dir

        dest = hf_copy_path(self.args.save_hf, rollout_id)
        dest.parent.mkdir(parents=True, exist_ok=True)
        staged = staging_dir(dest)
        try:
            ray.get([actor.export_weights.remote(str(staged)) for actor in self.actors])
            final = publish(staged, dest, rollout_id)
        finally:
            shutil.rmtree(staged, ignore_errors=True)  # an export cut short never stays behind
        logger.info("saved step %d as a Hugging Face model: %s", rollout_id, final)
        return final

    def offload(self) -> None:
        ray.get([actor.offload.remote() for actor in self.actors])

    def onload(self) -> None:
        ray.get([actor.onload.remote() for actor in self.actors])

    def update_weights(self, rollout_manager, version: int | None = None) -> float:
        """Push the weights to every engine the way ``--weight-sync`` says; returns seconds taken."""
        start = time.perf_counter()
        self.weight_version = self.weight_version + 1 if version is None else version
        mode = flag_value(self.args, "weight_sync")
        if mode in ("ipc", "nccl") and rollout_manager is not None:
            self.last_sync = self._update_weights_gpu(mode, rollout_manager)
            return time.perf_counter() - start
        dest = self.weights_root / f"v{self.weight_version:06d}"
        paths = ray.get([actor.export_weights.remote(str(dest)) for actor in self.actors])
        path = next(p for p in paths if p is not None)
        if rollout_manager is not None:
            ray.get(rollout_manager.update_weights_from_disk.remote(path, str(self.weight_version)))
        for old in self.weights_root.glob("v*"):
            if old.name != dest.name and old.is_dir():
                shutil.rmtree(old)  # staging copies of ours; checkpoints live under --save
        return time.perf_counter() - start

    def _update_weights_gpu(self, mode: str, rollout_manager) -> dict[str, float]:
        """IPC: each engine is driven by the rank on its GPU (engine j by rank j % world size); NCCL: by
        rank 0. The engines' recorded version follows, so the manager reports it."""
        urls = ray.get(rollout_manager.engine_urls.remote())
        ranks = len(self.actors)
        if mode == "ipc":
            assigned = [[u for j, u in enumerate(urls) if j % ranks == r] for r in range(ranks)]
        else:
            assigned = [urls] + [[] for _ in range(ranks - 1)]
        options = {
            "bucket_bytes": self.args.update_weight_buffer_size,
            "api": flag_value(self.args, "weight_sync_api"),
            "engine_world_size": flag_value(self.args, "rollout_num_gpus_per_engine"),
        }
        version = str(self.weight_version)
        results = ray.get(
            [
                a.send_weights_to_engines.remote(mode, assigned[r], version, options)
                for r, a in enumerate(self.actors)
            ]
        )
        ray.get(rollout_manager.note_weight_version.remote(version))
        return results[0]

    def kill(self) -> None:
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []
        if not self.args.update_weight_disk_dir:
            shutil.rmtree(self.weights_root, ignore_errors=True)
