"""Rollout data as the trainer sees it: per-sample lists, sharded over DP ranks, padded for a forward.

The rollout side hands over a dict of per-sample lists (slime's layout, built by the
convert-samples-to-train-data hook): ``tokens`` (prompt + response ids), ``response_lengths``,
``rewards`` (already post-processed, e.g. group-normalized for GRPO), ``loss_masks`` and
``rollout_log_probs`` (one entry per response token), plus optional extras (``raw_reward``...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

REQUIRED_KEYS = ("tokens", "response_lengths", "rewards")


@dataclass
class TrainBatch:
    """This rank's samples; tensors computed by the trainer are added to ``computed``."""

    tokens: list[list[int]]
    response_lengths: list[int]
    rewards: list[float]
    loss_masks: list[list[int]]
    rollout_log_probs: list[list[float]] | None = None
    extras: dict[str, list[Any]] = field(default_factory=dict)
    computed: dict[str, list[torch.Tensor]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.tokens)

    @classmethod
    def from_rollout_data(cls, data: dict[str, list[Any]]) -> TrainBatch:
        missing = [key for key in REQUIRED_KEYS if key not in data]
        if missing:
            raise ValueError(
                f"rollout data lacks {', '.join(missing)}: the convert-samples hook must provide them"
            )
        n = len(data["tokens"])
        lengths = [int(x) for x in data["response_lengths"]]
        loss_masks = data.get("loss_masks") or [[1] * length for length in lengths]
        for i, (tokens, length, mask) in enumerate(zip(data["tokens"], lengths, loss_masks, strict=True)):
            if not 0 <= length < len(tokens):
                raise ValueError(
                    f"sample {i}: response_length {length} does not fit its {len(tokens)} tokens"
                )
            if len(mask) != length:
                raise ValueError(
                    f"sample {i}: loss_mask has {len(mask)} entries for {length} response tokens"
                )
        rollout_lp = data.get("rollout_log_probs")
        if rollout_lp is not None and any(lp is None for lp in rollout_lp):
            rollout_lp = None
        known = {"tokens", "response_lengths", "rewards", "loss_masks", "rollout_log_probs"}
        extras = {
            k: list(v) for k, v in data.items() if k not in known and isinstance(v, list) and len(v) == n
        }
        return cls(
            tokens=[list(map(int, t)) for t in data["tokens"]],
            response_lengths=lengths,
            rewards=[float(r) for r in data["rewards"]],
            loss_masks=[list(map(int, m)) for m in loss_masks],
            rollout_log_probs=[list(map(float, lp)) for lp in rollout_lp] if rollout_lp is not None else None,
            extras=extras,
        )

    def select(self, indices: list[int]) -> TrainBatch:
        """The samples at ``indices`` (computed tensors included), in that order."""
        pick = lambda values: [values[i] for i in indices]  # noqa: E731
        return TrainBatch(
            tokens=pick(self.tokens),
            response_lengths=pick(self.response_lengths),
            rewards=pick(self.rewards),
            loss_masks=pick(self.loss_masks),
            rollout_log_probs=pick(self.rollout_log_probs) if self.rollout_log_probs is not None else None,
            extras={k: pick(v) for k, v in self.extras.items()},
            computed={k: pick(v) for k, v in self.computed.items()},
        )


def shard_indices(num_samples: int, rank: int, world_size: int) -> list[int]:
    """Contiguous, equal shards (the global batch size is validated to be a multiple of the ranks)."""
    per_rank, extra = divmod(num_samples, world_size)
    start = rank * per_rank + min(rank, extra)
    return list(range(start, start + per_rank + (1 if rank < extra else 0)))


def step_indices(num_samples: int, global_batch_size: int, world_size: int, rank: int) -> list[list[int]]:
    """For each optimizer step, the indices of this rank's shard of that step's global batch."""
    steps = []
    for start in range(0, num_samples, global_batch_size):
        size = min(global_batch_size, num_samples - start)
        steps.append([start + i for i in shard_indices(size, rank, world_size)])
    return steps


def pad_2d(
    rows: list[torch.Tensor] | list[list[float]], value: float = 0.0, dtype=torch.float32
) -> torch.Tensor:
    """Right-pad variable-length rows into ``[len(rows), max_len]``."""
    tensors = [r if isinstance(r, torch.Tensor) else torch.tensor(r, dtype=dtype) for r in rows]
    width = max((t.numel() for t in tensors), default=0)
    out = torch.full((len(tensors), width), value, dtype=tensors[0].dtype if tensors else dtype)
    for i, t in enumerate(tensors):
        out[i, : t.numel()] = t
    return out


def unpad(padded: torch.Tensor, lengths: list[int]) -> list[torch.Tensor]:
    """Inverse of :func:`pad_2d`."""
    return [padded[i, :length] for i, length in enumerate(lengths)]


def apply_rollout_data_postprocess(path: str, args, rollout_id: int, batch: TrainBatch) -> None:
    """Run ``--rollout-data-postprocess-path`` on this rank's samples once their log-probs exist.

    The hook edits a dict of per-sample lists in place (slime's contract); loss masks and
    rewards it changed are taken back, checked to still fit every sample.
    """
    from vime.utils.misc import load_function

    data: dict[str, list] = {
        "tokens": batch.tokens,
        "response_lengths": batch.response_lengths,
        "rewards": list(batch.rewards),
        "loss_masks": [list(m) for m in batch.loss_masks],
        "log_probs": [t.tolist() for t in batch.computed.get("old_log_probs", [])],
        **batch.extras,
    }
    if batch.rollout_log_probs is not None:
        data["rollout_log_probs"] = batch.rollout_log_probs
    load_function(path)(args, rollout_id, data)
    for i, (mask, length) in enumerate(zip(data["loss_masks"], batch.response_lengths, strict=True)):
        if len(mask) != length:
            raise ValueError(f"{path} left sample {i} with a {len(mask)}-entry loss mask for {length} tokens")
    if len(data["rewards"]) != len(batch):
        raise ValueError(f"{path} changed the number of rewards from {len(batch)} to {len(data['rewards'])}")
    batch.loss_masks = [list(map(int, m)) for m in data["loss_masks"]]
    batch.rewards = [float(r) for r in data["rewards"]]


def set_old_log_probs(batch: TrainBatch, recomputed: list[torch.Tensor], use_rollout_logprobs: bool) -> None:
    """Store this step's log probs and pick the "old" ones the ratio is taken against: the engine's
    (``--use-rollout-logprobs``, when the batch carries them) or the trainer's own recomputation."""
    batch.computed["train_log_probs"] = recomputed
    if use_rollout_logprobs and batch.rollout_log_probs is not None:
        batch.computed["old_log_probs"] = [torch.tensor(lp) for lp in batch.rollout_log_probs]
    else:
        batch.computed["old_log_probs"] = recomputed
