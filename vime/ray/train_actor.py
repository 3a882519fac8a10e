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

from vime.backends.vllm_utils.sink_choice import WeightPushOptions, WeightSyncConfig
from vime.ray.placement_group import PlacementSlice
from vime.ray.push_beside_training import PushBesideTraining
from vime.utils.lora_settings import LoraSettings

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
        self.engine_sinks = None  # engine clients and NCCL group, made at the first GPU weight push
        self.beside = PushBesideTraining()  # a push running beside the next train() (start_weight_push)

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

    def data_parallel(self) -> tuple[int, int]:
        """This rank's data shard and the number of shards (model-parallel ranks of one shard share it)."""
        return self.backend.data_parallel_rank, self.backend.data_parallel_size

    def train(self, rollout_id: int, rollout_data) -> dict[str, float]:
        """Train on this rank's share (a ``TrainBatch`` split by the rollout manager) or on the whole
        rollout dict (the backend then picks its share)."""
        from vime.backends.train_data import TrainBatch

        if not isinstance(rollout_data, TrainBatch):
            rollout_data = TrainBatch.from_rollout_data(rollout_data)
        self.beside.before_train(self.backend)
        result = self.backend.train(rollout_id, rollout_data)
        return result | self.beside.after_train()

    def compute_logprobs(self, rollout_data: dict[str, list]) -> list[list[float]]:
        self.beside.settle()
        from vime.backends.train_data import TrainBatch

        return [t.tolist() for t in self.backend.compute_logprobs(TrainBatch.from_rollout_data(rollout_data))]

    def export_weights(self, dest: str) -> str | None:
        self.beside.settle()
        path = self.backend.export_weights(Path(dest))
        return str(path) if path is not None else None

    def export_adapter(self, dest: str) -> str | None:
        """The LoRA adapter alone, as a PEFT directory (rank 0 returns its path)."""
        self.beside.settle()
        path = self.backend.export_adapter(Path(dest))
        return str(path) if path is not None else None

    def note_weights_pushed(self, version: str) -> None:
        self.backend.note_weights_pushed(version)

    def debug_train_records(self) -> tuple[int, list[dict[str, Any]]]:
        """This rank's data-parallel index and what its last train() used, one dict per sample."""
        batch = self.backend.last_train_batch
        return self.backend.data_parallel_rank, batch.debug_records() if batch is not None else []

    def start_weight_push(self, urls: list[str], version: str, options) -> bool:
        """``--fully-async`` with ``ipc``: start this rank's push in a thread and return at once, so the
        next train() runs beside it; that step's optimizer waits for the push (the engines copy these
        weights in place). False, and nothing started, where the backend cannot train beside a push."""
        import torch

        ready = torch.cuda.Event() if torch.cuda.is_available() else None
        if ready is not None:
            ready.record()  # the weights as the last step left them: the push waits for this, not the next step
        device = torch.cuda.current_device() if ready is not None else None

        def push() -> dict[str, float]:
            if device is not None:
                torch.cuda.set_device(device)  # a new thread starts on device 0
            return self._send_weights(urls, version, options, ready)

        return self.beside.start(self.backend, version, push)

    def send_weights_to_engines(self, urls: list[str], version: str, options) -> dict[str, float]:
        """``ipc`` / ``nccl``: every rank calls this (gathers are collective); ranks given ``urls`` drive
        the engines: pause, send the buckets, reset prefix caches, tag the version, resume. Which sink
        ``options`` (a ``WeightPushOptions``) names is decided in ``vllm_utils.sink_choice``."""
        self.beside.settle()
        return self._send_weights(urls, version, options)

    def _send_weights(self, urls: list[str], version: str, options, ready=None) -> dict[str, float]:
        """:meth:`send_weights_to_engines`' work; ``ready``: a CUDA event after which the weights are
        final (a push beside training), else the sink synchronizes the stream."""
        from vime.backends.vllm_utils.sink_choice import EngineSinks, NullSink
        from vime.backends.vllm_utils.weight_transfer import push_weights

        if not urls:
            self.backend.send_weights(NullSink(), options.bucket_bytes)
            return {}
        if self.engine_sinks is None:
            self.engine_sinks = EngineSinks()
        clients = self.engine_sinks.clients(urls)
        sink = self.engine_sinks.choose(options, clients, self.master_address)
        sent = {"bytes": 0}

        def send() -> None:
            sent["bytes"] = self.backend.send_weights(sink, options.bucket_bytes)

        sink.ready = ready
        try:
            seconds = push_weights(clients, send, version, options.pause_mode, sink=sink)
        finally:
            sink.ready = None
        return {f"weight_sync/{k}_s": v for k, v in seconds.items()} | {
            "weight_sync/bytes": float(sent["bytes"]),
            "weight_sync/buckets": float(getattr(sink, "buckets", 0)),
        }

    def save(self, rollout_id: int) -> None:
        self.beside.settle()
        self.backend.save(rollout_id)

    def offload(self) -> dict[str, float]:
        self.beside.settle()
        return self.backend.offload() or {}

    def onload(self) -> dict[str, float]:
        self.beside.settle()
        return self.backend.onload() or {}


class TrainGroup:
    """All training ranks; calls go to every rank and rank 0's answer is returned."""

    def __init__(self, args: Namespace, placement: PlacementSlice) -> None:
        self.args = args
        self.weight_sync = WeightSyncConfig.from_args(args)
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
        self.dp_ranks: list[int] = []  # each actor's data-parallel rank, and their number (after init)
        self.dp_size = 0
        self.offload_metrics: dict[str, float] = {}  # rank 0's latest offload / onload figures
        self.push_beside_training = True  # until a rank's backend says it cannot (start_weight_push)
        self.last_sync: dict[str, float] = {}

    def init(self) -> int:
        """Build every rank's model; returns the rollout id to start from (from ``--load``)."""
        addr, port = ray.get(self.actors[0].master_address.remote())
        starts = ray.get([actor.init.remote(addr, port) for actor in self.actors])
        places = ray.get([actor.data_parallel.remote() for actor in self.actors])
        self.dp_ranks = [dp_rank for dp_rank, _ in places]
        self.dp_size = places[0][1]
        return starts[0]

    def async_train(self, rollout_id: int, rollout_data) -> list[ray.ObjectRef]:
        """Each rank trains on its own share: ``rollout_data`` is the manager's
        :class:`~vime.ray.rollout_data.RolloutShards` (one reference per data-parallel rank), or a
        whole dict (``--load-debug-rollout-data``, tests) that is split here the same way."""
        from vime.ray.rollout_data import RolloutShards, shards_for_training

        if not isinstance(rollout_data, RolloutShards):
            rollout_data = shards_for_training(rollout_data, self.args, self.dp_size)
        if len(rollout_data.refs) != self.dp_size:
            raise ValueError(
                f"the rollout was split for {len(rollout_data.refs)} data-parallel ranks, the trainer has "
                f"{self.dp_size}: split it with TrainGroup.dp_size"
            )
        return [
            actor.train.remote(rollout_id, rollout_data.refs[dp_rank])
            for actor, dp_rank in zip(self.actors, self.dp_ranks, strict=True)
        ]

    def train(self, rollout_id: int, rollout_data) -> dict[str, float]:
        return ray.get(self.async_train(rollout_id, rollout_data))[0]

    def compute_logprobs(self, rollout_data) -> list[list[float]]:
        """Every rank computes; each returns all samples' log-probs (no sharding here)."""
        return ray.get([actor.compute_logprobs.remote(rollout_data) for actor in self.actors])[0]

    def save(self, rollout_id: int) -> None:
        ray.get([actor.save.remote(rollout_id) for actor in self.actors])
        if self.args.save_hf:
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

    def save_debug_train_data(self, template: str, rollout_id: int) -> Path:
        """``--save-debug-train-data``: what every data-parallel shard trained on in one file."""
        from vime.rollout.debug_data import save_train_data

        shards: dict[int, list[dict[str, Any]]] = {}
        for dp_rank, records in ray.get([actor.debug_train_records.remote() for actor in self.actors]):
            shards.setdefault(dp_rank, records)  # model-parallel ranks of one shard hold the same samples
        path = save_train_data(template, rollout_id, [shards[r] for r in sorted(shards)])
        logger.info("step %d train data written to %s", rollout_id, path)
        return path

    def offload(self) -> None:
        """Every rank frees its GPU; rank 0's figures (bytes, host region, seconds) go to ``offload_metrics``."""
        self.offload_metrics |= ray.get([actor.offload.remote() for actor in self.actors])[0]

    def onload(self) -> None:
        self.offload_metrics |= ray.get([actor.onload.remote() for actor in self.actors])[0]

    def update_weights(
        self,
        rollout_manager,
        version: int | None = None,
        pause_mode: str = "wait",
        beside_training: bool = False,
    ) -> float:
        """Push the weights to every engine the way ``--weight-sync`` says; returns seconds taken.

        ``pause_mode``: what the engines do with requests in flight (``wait`` for them, or ``keep``
        them frozen across the reload: ``--fully-async``). ``beside_training``: with ``ipc``, start the
        push and return; it runs beside the next train(), whose optimizer step waits for it, and its
        figures come back in that train()'s result (where the backend cannot, the push runs here).
        """
        start = time.perf_counter()
        self.weight_version = self.weight_version + 1 if version is None else version
        if beside_training and self.weight_sync.mode == "ipc" and rollout_manager is not None:
            started = self._start_push_beside_training(rollout_manager, pause_mode)
            if started is not None:
                self.last_sync = started
                return time.perf_counter() - start
        if rollout_manager is not None and LoraSettings.from_args(self.args).sends_adapter:
            self.last_sync = self._update_lora_adapter(rollout_manager, pause_mode)
            self._note_pushed()
            return time.perf_counter() - start
        if self.weight_sync.pushes_to_engines and rollout_manager is not None:
            self.last_sync = self._update_weights_gpu(self.weight_sync.mode, rollout_manager, pause_mode)
            noted = time.perf_counter()
            self._note_pushed()
            self.last_sync["weight_sync/note_ranks_s"] = time.perf_counter() - noted
            return time.perf_counter() - start
        dest = self.weights_root / f"v{self.weight_version:06d}"
        paths = ray.get([actor.export_weights.remote(str(dest)) for actor in self.actors])
        path = next(p for p in paths if p is not None)
        if rollout_manager is not None:
            ray.get(
                rollout_manager.update_weights_from_disk.remote(path, str(self.weight_version), pause_mode)
            )
        for old in self.weights_root.glob("v*"):
            if old.name != dest.name and old.is_dir():
                shutil.rmtree(old)  # staging copies of ours; checkpoints live under --save
        self._note_pushed()
        return time.perf_counter() - start

    def _note_pushed(self) -> None:
        """Tell every rank which version the engines now serve (``--keep-old-actor`` keeps a copy)."""
        ray.get([actor.note_weights_pushed.remote(str(self.weight_version)) for actor in self.actors])

    def _update_lora_adapter(self, rollout_manager, pause_mode: str) -> dict[str, float]:
        """LoRA: only the adapter travels (a PEFT directory of a few MB); the engines serve base + adapter."""
        started = time.perf_counter()
        dest = self.weights_root / f"adapter_v{self.weight_version:06d}"
        paths = ray.get([actor.export_adapter.remote(str(dest)) for actor in self.actors])
        path = next(p for p in paths if p is not None)
        exported = time.perf_counter() - started
        ray.get(rollout_manager.update_lora_adapter.remote(path, str(self.weight_version), pause_mode))
        for old in self.weights_root.glob("adapter_v*"):
            if old.name != dest.name and old.is_dir():
                shutil.rmtree(old)  # engines copied the previous adapter into memory when they loaded it
        return {
            "weight_sync/bytes": float(sum(f.stat().st_size for f in Path(path).iterdir() if f.is_file())),
            "weight_sync/export_s": exported,
            "weight_sync/load_s": time.perf_counter() - started - exported,
        }

    def _start_push_beside_training(self, rollout_manager, pause_mode: str) -> dict[str, float] | None:
        """Each rank starts its engines' push in a thread; the manager learns the version now, so the
        next take bounds staleness against it as if the push were done. None: no rank could."""
        if not self.push_beside_training:
            return None
        mark = time.perf_counter()
        urls = ray.get(rollout_manager.engine_urls.remote())
        ranks = len(self.actors)
        assigned = [[u for j, u in enumerate(urls) if j % ranks == r] for r in range(ranks)]
        options = WeightPushOptions.from_args(self.args, pause_mode)
        version = str(self.weight_version)
        started = ray.get(
            [a.start_weight_push.remote(assigned[r], version, options) for r, a in enumerate(self.actors)]
        )
        if not all(started):  # one backend for every rank: all or none
            self.push_beside_training = False
            return None
        ray.get(rollout_manager.note_weight_version.remote(version))
        self._note_pushed()
        return {"weight_sync/start_s": time.perf_counter() - mark}

    def _update_weights_gpu(self, mode: str, rollout_manager, pause_mode: str) -> dict[str, float]:
        """IPC: each engine is driven by the rank on its GPU (engine j by rank j % world size); NCCL: by
        rank 0. The engines' recorded version follows, so the manager reports it. Each round trip's
        driver-side seconds join the rank's figures (``weight_sync/urls_s``, ``ranks_s``, ``note_manager_s``)."""
        mark = time.perf_counter()
        urls = ray.get(rollout_manager.engine_urls.remote())
        seconds = {"weight_sync/urls_s": time.perf_counter() - mark}
        ranks = len(self.actors)
        if mode == "ipc":
            assigned = [[u for j, u in enumerate(urls) if j % ranks == r] for r in range(ranks)]
        else:
            assigned = [urls] + [[] for _ in range(ranks - 1)]
        options = WeightPushOptions.from_args(self.args, pause_mode)
        version = str(self.weight_version)
        mark = time.perf_counter()
        results = ray.get(
            [
                a.send_weights_to_engines.remote(assigned[r], version, options)
                for r, a in enumerate(self.actors)
            ]
        )
        seconds["weight_sync/ranks_s"] = time.perf_counter() - mark
        mark = time.perf_counter()
        ray.get(rollout_manager.note_weight_version.remote(version))
        seconds["weight_sync/note_manager_s"] = time.perf_counter() - mark
        return results[0] | seconds

    def kill(self) -> None:
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []
        if not self.args.update_weight_disk_dir:
            shutil.rmtree(self.weights_root, ignore_errors=True)
