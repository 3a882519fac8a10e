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

    def __init__(self, args: Namespace, rank: int, world_size: int) -> None:
        self.args = args
        self.rank = rank
        self.world_size = world_size

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

    def offload(self) -> None:  # noqa: B027 - a no-op is right for backends without an accelerator
        """Free accelerator memory while the engines generate (colocated runs)."""

    def onload(self) -> None:  # noqa: B027
        """Undo :meth:`offload` before training."""
