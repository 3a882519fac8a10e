"""One step's rollout data on its way to the trainer: split per data-parallel rank where it is made.

The rollout manager converts its samples to the trainer's dict, then splits it with the very planner
the backends use (:func:`vime.backends.micro_batches.rank_shares`) and puts each rank's share in
Ray's object store. The driver receives a :class:`RolloutShards`: the step's summary and one object
reference per data-parallel rank, never the samples themselves, so the data goes from the manager
to each rank once (slime's ``_split_train_data_by_dp``), not through the driver to every rank.
"""

from __future__ import annotations

from argparse import Namespace
from dataclasses import dataclass, field, replace
from typing import Any

import ray

from vime.backends.micro_batches import BatchingConfig, rank_shares
from vime.backends.train_data import TrainBatch


@dataclass
class RolloutShards:
    """What the driver holds of one step's rollout.

    ``summary``: the step record's rollout figures (:func:`rollout_summary`); ``refs``: one object
    reference per data-parallel rank (its :class:`TrainBatch` share), empty when no trainer takes
    it; ``whole``: the whole dict (in the driver, or a reference to it), kept only where the driver
    needs it (``--save-debug-rollout-data``, ``--debug-rollout-only``, ``--load-debug-rollout-data``).
    """

    summary: dict[str, float]
    refs: list[ray.ObjectRef] = field(default_factory=list)
    whole: Any = None

    def whole_data(self) -> dict[str, list] | None:
        """The whole dict, fetched if the manager kept it in the object store."""
        return ray.get(self.whole) if isinstance(self.whole, ray.ObjectRef) else self.whole


def split_by_data_parallel(data: dict[str, list], args: Namespace, dp_size: int) -> list[TrainBatch]:
    """Each data-parallel rank's share of the rollout, in its training order, its plan attached.

    The same samples in the same order as the backend picks from the whole batch: both go through
    ``rank_shares`` with ``--global-batch-size`` and the batching flags.
    """
    batch = TrainBatch.from_rollout_data(data)
    lengths = [len(t) for t in batch.tokens]
    shares = rank_shares(lengths, args.global_batch_size, dp_size, BatchingConfig.from_args(args))
    return [replace(batch.select(share.order), share=share) for share in shares]


def shards_for_training(
    data: dict[str, list], args: Namespace, dp_size: int, keep_whole: bool = False
) -> RolloutShards:
    """Split ``data`` for ``dp_size`` ranks (none: 0) and put each share in the object store."""
    refs = [ray.put(batch) for batch in split_by_data_parallel(data, args, dp_size)] if dp_size else []
    return RolloutShards(rollout_summary(data), refs, ray.put(data) if keep_whole else None)


def rollout_summary(data: dict[str, list]) -> dict[str, float]:
    """Mean raw reward and response length of a rollout, for the step record."""
    out: dict[str, float] = {}
    raw = data.get("raw_reward") or data.get("rewards")
    if raw:
        out["rollout/raw_reward"] = sum(float(r) for r in raw) / len(raw)
        out["rollout/full_reward_share"] = sum(float(r) >= 1.0 for r in raw) / len(raw)
    if data.get("tokens") is not None:
        out["rollout/samples"] = float(len(data["tokens"]))
    lengths = data.get("response_lengths")
    if lengths:
        out["rollout/response_len"] = sum(lengths) / len(lengths)
    if data.get("truncated"):
        out["rollout/truncated"] = sum(data["truncated"]) / len(data["truncated"])
    return out
