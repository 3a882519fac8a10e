"""Training ranks as Ray actors, and the group the training loop drives.

Each :class:`TrainRayActor` is one data-parallel rank holding a backend (vime.backends.base);
:class:`TrainGroup` starts them, joins them into one process group, fans calls out and
pushes weights to the rollout engines (on the CPU: a Hugging Face dir on disk that the
engines reload, see the RolloutManager's ``update_weights_from_disk``).
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

logger = logging.getLogger(__name__)


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
        if self.world_size > 1:
            backend = self.args.distributed_backend or ("nccl" if torch.cuda.is_available() else "gloo")
            os.environ.update(MASTER_ADDR=master_addr, MASTER_PORT=str(master_port))
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

    def save(self, rollout_id: int) -> None:
        self.backend.save(rollout_id)

    def offload(self) -> None:
        self.backend.offload()

    def onload(self) -> None:
        self.backend.onload()


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
                    "num_gpus": 1,
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

    def offload(self) -> None:
        ray.get([actor.offload.remote() for actor in self.actors])

    def onload(self) -> None:
        ray.get([actor.onload.remote() for actor in self.actors])

    def update_weights(self, rollout_manager, version: int | None = None) -> float:
        """Write the weights to disk and have every engine reload them; returns seconds taken."""
        start = time.perf_counter()
        self.weight_version = self.weight_version + 1 if version is None else version
        dest = self.weights_root / f"v{self.weight_version:06d}"
        paths = ray.get([actor.export_weights.remote(str(dest)) for actor in self.actors])
        path = next(p for p in paths if p is not None)
        if rollout_manager is not None:
            ray.get(rollout_manager.update_weights_from_disk.remote(path, str(self.weight_version)))
        for old in self.weights_root.glob("v*"):
            if old.name != dest.name and old.is_dir():
                shutil.rmtree(old)  # staging copies of ours; checkpoints live under --save
        return time.perf_counter() - start

    def kill(self) -> None:
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []
        if not self.args.update_weight_disk_dir:
            shutil.rmtree(self.weights_root, ignore_errors=True)
