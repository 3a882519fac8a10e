"""Rollout data as the trainer sees it: per-sample lists, sharded over DP ranks, padded for a forward.

The rollout side hands over a dict of per-sample lists (slime's layout, built by the
convert-samples-to-train-data hook): ``tokens`` (prompt + response ids), ``response_lengths``,
``rewards`` (already post-processed, e.g. group-normalized for GRPO), ``loss_masks`` and
``rollout_log_probs`` (one entry per response token), plus optional extras (``raw_reward``...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from vime.algorithms.estimators import estimator

if TYPE_CHECKING:
    from vime.backends.micro_batches import RankShare

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
    # set when the rollout manager already split the rollout: these samples are one rank's share,
    # in its order, with that rank's micro-batches (vime.backends.micro_batches.rank_shares)
    share: RankShare | None = None

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

    def debug_records(self) -> list[dict[str, Any]]:
        """One dict per sample of what the trainer used (``--save-debug-train-data``): its inputs, the
        rollout's per-sample extras and every per-token tensor computed (``old_log_probs`` under slime's
        name ``log_probs``)."""
        renamed = {"old_log_probs": "log_probs"}
        indices = self.extras.get("sample_indices")
        records = []
        for i in range(len(self)):
            record: dict[str, Any] = {
                "sample_index": indices[i] if indices is not None else None,
                "tokens": self.tokens[i],
                "response_length": self.response_lengths[i],
                "reward": self.rewards[i],
                "loss_mask": self.loss_masks[i],
            }
            record |= {key: values[i] for key, values in self.extras.items() if key != "sample_indices"}
            if self.rollout_log_probs is not None:
                record["rollout_log_probs"] = torch.tensor(self.rollout_log_probs[i])
            for key, values in self.computed.items():
                record[renamed.get(key, key)] = values[i].detach().cpu()
            records.append(record)
        return records

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


def old_log_probs_source(args, optimizer_steps: int, has_rollout_log_probs: bool) -> str:
    """Where the ratio's "old" log-probs come from, as slime's Megatron actor decides it:

    ``rollout``: the engine's (``--use-rollout-logprobs`` and the batch carries them); ``in_loss``:
    the training forward's own, detached. That is slime's ``can_reuse_log_probs_in_loss``: with one
    optimizer step per rollout the weights of that forward are the weights a separate pass would
    use, so the pass is skipped (plain policy loss, no reward KL, no critic, no old actor, no OPD,
    not GSPO). vime also keeps the pass when a rollout-data hook or the train-data dump reads the
    log-probs before training. ``recompute``: a forward pass over the batch before training.
    """
    if args.use_rollout_logprobs and has_rollout_log_probs:
        return "rollout"
    reusable = (
        optimizer_steps == 1
        and args.loss_type == "policy_loss"
        and not args.kl_coef
        and not args.use_rollout_logprobs
        and not args.use_critic
        and not args.keep_old_actor
        and not args.use_opd
        and estimator(args.advantage_estimator).policy_loss != "gspo"  # a sequence ratio
        and not args.rollout_data_postprocess_path
        and not args.save_debug_train_data
    )
    return "in_loss" if reusable else "recompute"


def set_old_log_probs(batch: TrainBatch, recomputed: list[torch.Tensor], use_rollout_logprobs: bool) -> None:
    """Store this step's log probs and pick the "old" ones the ratio is taken against: the engine's
    (``--use-rollout-logprobs``, when the batch carries them) or the trainer's own recomputation."""
    batch.computed["train_log_probs"] = recomputed
    if use_rollout_logprobs and batch.rollout_log_probs is not None:
        batch.computed["old_log_probs"] = [torch.tensor(lp) for lp in batch.rollout_log_probs]
    else:
        batch.computed["old_log_probs"] = recomputed
