"""The narrow interface every training backend implements (torch on the CPU, Megatron-core on GPUs).

The Ray train actor and the training loops talk to a backend only through these methods,
so a new backend plugs in without touching orchestration. Data in and out are plain
Python / torch objects; the backend owns its model, optimizer and process group.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from argparse import Namespace
from pathlib import Path

import torch

from vime.backends.train_data import TrainBatch


class TrainBackend(ABC):
    """One data-parallel rank of a trainer. ``rank``/``world_size`` are its place in the DP group."""

    # this rank's shard of the last train() with what it computed (--save-debug-train-data reads it)
    last_train_batch: TrainBatch | None = None

    def __init__(self, args: Namespace, rank: int, world_size: int) -> None:
        self.args = args
        self.rank = rank
        self.world_size = world_size

    @property
    def data_parallel_rank(self) -> int:
        """Which data shard this rank trains (ranks of one model-parallel group share it)."""
        return self.rank

    @property
    def data_parallel_size(self) -> int:
        """How many data shards a rollout is split into (the rollout manager sends one to each)."""
        return self.world_size

    def note_weights_pushed(self, version: str) -> None:  # noqa: B027 - most backends keep nothing
        """The engines now serve this rank's current weights as ``version`` (``--keep-old-actor``)."""

    def guard_weight_changes(self, wait) -> bool:
        """Call ``wait()`` before this rank's next change of its weights (the optimizer step), so that
        a push reading the weights in place may run beside the next train(); False where the backend
        cannot (the caller then waits before the whole train())."""
        return False

    @abstractmethod
    def init(self) -> int:
        """Build model and optimizer, load ``--load`` if any; return the first rollout id to run."""

    @abstractmethod
    def compute_logprobs(self, batch: TrainBatch) -> list[torch.Tensor]:
        """Log-probs of each sample's response tokens under the current weights (no grad)."""

    @abstractmethod
    def train(self, rollout_id: int, batch: TrainBatch) -> dict[str, float]:
        """One rollout's worth of optimizer steps on this rank's shard; metrics reduced over ranks."""

    @abstractmethod
    def export_weights(self, dest: Path) -> Path | None:
        """Write the weights in Hugging Face layout to ``dest`` (rank 0 returns it, others None)."""

    def send_weights(self, sink, bucket_bytes: int) -> int:
        """Feed the weights (HF names) to a weight sink in buckets of ``bucket_bytes``; returns bytes sent.

        Every rank calls it (gathers are collective); only the sending rank's sink sees data.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot send weights to engines directly: use disk")

    @abstractmethod
    def save(self, rollout_id: int) -> None:
        """Checkpoint model, optimizer and training state after ``rollout_id``."""

    @abstractmethod
    def load(self) -> int | None:
        """Load the newest checkpoint under ``--load``; return its rollout id (None: nothing loaded)."""

    def offload(self) -> dict[str, float]:
        """Free accelerator memory while the engines generate (colocated runs); returns metrics of
        what it took (``offload/...``). Nothing to do for backends without an accelerator."""
        return {}

    def onload(self) -> dict[str, float]:
        """Undo :meth:`offload` before training; returns metrics (``offload/onload_s``)."""
        return {}
