"""slime's loss hooks on vime's padded batches: the custom loss, advantage, TIS and pg-loss reducer.

slime hands its hooks per-sample lists and *packed* tensors (all samples' response tokens back to
back; logits ``[1, sum(total_lengths), vocab]``), and its reducers return sums of per-sample means
that Megatron later divides by the step's batch. vime trains on padded ``[batch, tokens]`` pieces
whose loss is already their share of the global mean. This module converts between the two, so a
hook written for slime runs unchanged:

- ``--loss-type custom_loss``: ``fn(args, batch, logits, sum_of_sample_mean) -> (loss, metrics)``.
  ``batch`` holds, per sample, ``unconcat_tokens``, ``total_lengths``, ``response_lengths``,
  ``loss_masks``, ``advantages``, ``log_probs`` (old), ``rewards`` and, when the run has them,
  ``ref_log_probs``, ``rollout_log_probs``, ``teacher_log_probs``, ``returns``, ``values``.
  ``sum_of_sample_mean`` is slime's reducer; vime divides the returned loss and metrics by the
  step's samples (tokens with ``--calculate-per-token-loss``), as slime's scaling does.
- ``--custom-advantage-function-path``: ``fn(args, rollout_data)`` sets ``advantages`` and
  ``returns`` (per-sample tensors) in place.
- ``--custom-tis-function-path``: ``fn(args, *, pg_loss, train_log_probs, rollout_log_probs,
  loss_masks, total_lengths, response_lengths) -> (pg_loss, loss_masks, metrics)``.
- ``--custom-pg-loss-reducer-function-path``: ``fn(total_lengths, response_lengths, loss_masks,
  calculate_per_token_loss) -> reducer``.

The defaults here (:func:`vanilla_tis_function`, :func:`sum_of_sample_mean_reducer`,
:func:`policy_loss_function`, :func:`grpo_advantage_function`) are what vime does without the hook,
and pass the contracts in ``tests/contract/``.
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from vime.algorithms.loss import LossHooks
from vime.backends.train_data import TrainBatch, pad_2d, unpad
from vime.utils.args.defaults import config_from_args
from vime.utils.misc import load_function

Reducer = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class HookFlags:
    """The flags these hooks read. Built from whatever ``args`` a hook is handed: slime's signatures
    pass ``args`` through, and a plugin may hand its own namespace (the parser's defaults fill in)."""

    custom_tis_function_path: str | None = None
    custom_pg_loss_reducer_function_path: str | None = None
    calculate_per_token_loss: bool = False
    tis_clip: float = 2.0
    tis_clip_low: float = 0.0
    rollout_temperature: float = 1.0
    eps_clip: float = 0.2

    @classmethod
    def from_args(cls, args: Any) -> HookFlags:
        return config_from_args(
            cls,
            args,
            dests={
                "calculate_per_token_loss": ("calculate_per_token_loss", bool),
                "rollout_temperature": ("rollout_temperature", float),
                "eps_clip": ("eps_clip", float),
            },
        )


# ----- packing -------------------------------------------------------------------------------
def pack(padded: torch.Tensor, lengths: list[int]) -> torch.Tensor:
    """``[batch, width]`` rows cut to their lengths and joined: slime's per-token layout."""
    return torch.cat([padded[i, :n] for i, n in enumerate(lengths)]) if lengths else padded.new_zeros(0)


def unpack(packed: torch.Tensor, lengths: list[int]) -> torch.Tensor:
    """Inverse of :func:`pack` (right padding with zeros)."""
    return pad_2d(list(torch.split(packed, lengths)), dtype=packed.dtype)


# ----- reducers --------------------------------------------------------------------------------
def sum_of_sample_mean_reducer(
    total_lengths: list[int],
    response_lengths: list[int],
    loss_masks: list[torch.Tensor],
    calculate_per_token_loss: bool = False,
) -> Reducer:
    """slime's ``sum_of_sample_mean``: per sample the masked token mean, summed (or the masked token sum)."""
    masks = [m.float() for m in loss_masks]

    def reduce(values: torch.Tensor) -> torch.Tensor:
        parts = torch.split(values, list(response_lengths))
        if calculate_per_token_loss:
            return sum(((p * m).sum() for p, m in zip(parts, masks, strict=True)), values.new_zeros(()))
        return sum(
            ((p * m).sum() / m.sum().clamp_min(1.0) for p, m in zip(parts, masks, strict=True)),
            values.new_zeros(()),
        )

    return reduce


def _padded_pg_reducer(
    factory: Callable[..., Reducer], piece: TrainBatch, per_token: bool, denominator: float
):
    lengths = piece.response_lengths
    totals = [len(t) for t in piece.tokens]
    masks = [torch.tensor(m, dtype=torch.float32) for m in piece.loss_masks]
    reducer = factory(totals, lengths, masks, per_token)

    def reduce(values: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
        return reducer(pack(values, lengths)) / max(denominator, 1.0)

    return reduce


# ----- TIS ------------------------------------------------------------------------------------
def vanilla_tis_function(
    args: Any,
    *,
    pg_loss: torch.Tensor,
    train_log_probs: list[torch.Tensor],
    rollout_log_probs: list[torch.Tensor],
    loss_masks: list[torch.Tensor],
    **kwargs: Any,
) -> tuple[torch.Tensor, list[torch.Tensor], dict[str, torch.Tensor]]:
    """Truncated importance sampling (vime's default, slime's ``vanilla_tis_function``)."""
    ratio = torch.exp(torch.cat(train_log_probs) - torch.cat(rollout_log_probs))
    flags = HookFlags.from_args(args)
    weights = ratio.clamp(min=flags.tis_clip_low, max=flags.tis_clip)
    metrics = {
        "tis": ratio.detach(),
        "tis_clipfrac": (weights != ratio).float(),
        "tis_abs": (ratio - 1).abs().detach(),
    }
    return pg_loss * weights, loss_masks, metrics


def _padded_tis(fn: Callable[..., Any], args: Any, piece: TrainBatch):
    lengths = piece.response_lengths
    totals = [len(t) for t in piece.tokens]

    def tis(pg_loss, old_log_probs, rollout_log_probs, loss_mask):
        masks = [loss_mask[i, :n] for i, n in enumerate(lengths)]
        out, kept, metrics = fn(
            args,
            pg_loss=pack(pg_loss, lengths),
            train_log_probs=unpad(old_log_probs.detach(), lengths),
            rollout_log_probs=unpad(rollout_log_probs, lengths),
            loss_masks=masks,
            total_lengths=totals,
            response_lengths=lengths,
        )
        kept_padded = pad_2d([torch.as_tensor(m, dtype=torch.float32) for m in kept])
        return (
            unpack(out, lengths),
            kept_padded,
            {k: unpack(v.float(), lengths) for k, v in metrics.items()},
        )

    return tis


def loss_hooks_for(args: Namespace, piece: TrainBatch, denominator: float) -> LossHooks:
    """The TIS and pg-reducer hooks the flags name, bound to one micro-batch."""
    flags = HookFlags.from_args(args)
    tis_path, reducer_path = flags.custom_tis_function_path, flags.custom_pg_loss_reducer_function_path
    if not tis_path and not reducer_path:
        return LossHooks()
    per_token = flags.calculate_per_token_loss
    return LossHooks(
        tis=_padded_tis(load_function(tis_path), args, piece) if tis_path else None,
        pg_reduce=(
            _padded_pg_reducer(load_function(reducer_path), piece, per_token, denominator)
            if reducer_path
            else None
        ),
    )


# ----- log-probs from packed logits (what a custom loss calls) ---------------------------------
def get_log_probs_and_entropy(
    logits: torch.Tensor,
    *,
    args: Any,
    unconcat_tokens: list[torch.Tensor],
    total_lengths: list[int],
    response_lengths: list[int],
    with_entropy: bool = False,
    **kwargs: Any,
) -> tuple[torch.Tensor, dict[str, list[torch.Tensor]]]:
    """Per-sample response log-probs (and entropy) from packed logits ``[1, T, V]``, as slime's function."""
    from vime.algorithms.policy_loss import entropy_from_logits

    flat = logits.squeeze(0)
    temperature = HookFlags.from_args(args).rollout_temperature
    log_probs, entropy, end = [], [], 0
    for tokens, total, response in zip(unconcat_tokens, total_lengths, response_lengths, strict=True):
        end += total
        chunk = flat[end - response - 1 : end - 1].float()
        if temperature != 1.0:
            chunk = chunk / temperature
        targets = torch.as_tensor(tokens)[-response:].long() if response else torch.zeros(0, dtype=torch.long)
        log_probs.append(torch.log_softmax(chunk, -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1))
        if with_entropy:
            entropy.append(entropy_from_logits(chunk))
    out: dict[str, list[torch.Tensor]] = {"log_probs": log_probs}
    if with_entropy:
        out["entropy"] = entropy
    return logits.new_zeros(0), out


# ----- slime's batch dict ----------------------------------------------------------------------
_PER_TOKEN_KEYS = {
    "old_log_probs": "log_probs",
    "ref_log_probs": "ref_log_probs",
    "teacher_log_probs": "teacher_log_probs",
    "advantages": "advantages",
    "returns": "returns",
    "values": "values",
}


def slime_batch(piece: TrainBatch) -> dict[str, Any]:
    """One micro-batch in slime's ``RolloutBatch`` layout (per-sample lists)."""
    batch: dict[str, Any] = {
        "unconcat_tokens": [torch.tensor(t, dtype=torch.long) for t in piece.tokens],
        "total_lengths": [len(t) for t in piece.tokens],
        "response_lengths": list(piece.response_lengths),
        "loss_masks": [torch.tensor(m, dtype=torch.float32) for m in piece.loss_masks],
        "rewards": list(piece.rewards),
    }
    for ours, theirs in _PER_TOKEN_KEYS.items():
        if ours in piece.computed:
            batch[theirs] = [torch.as_tensor(t, dtype=torch.float32) for t in piece.computed[ours]]
    if piece.rollout_log_probs is not None:
        batch["rollout_log_probs"] = [torch.tensor(lp, dtype=torch.float32) for lp in piece.rollout_log_probs]
    return batch


def packed_logits(logits: torch.Tensor, tokens: list[list[int]]) -> torch.Tensor:
    """Padded ``[batch, width, vocab]`` logits as slime's packed ``[1, sum(lengths), vocab]`` (float32)."""
    return torch.cat([logits[i, : len(t)] for i, t in enumerate(tokens)]).float().unsqueeze(0)


def custom_loss(
    fn: Callable[..., Any], args: Namespace, piece: TrainBatch, logits: torch.Tensor, denominator: float
) -> tuple[torch.Tensor, dict[str, float]]:
    """Call a slime-style loss on one micro-batch; the loss comes back as this piece's share of the global mean."""
    batch = slime_batch(piece)
    reducer = sum_of_sample_mean_reducer(
        batch["total_lengths"],
        batch["response_lengths"],
        batch["loss_masks"],
        HookFlags.from_args(args).calculate_per_token_loss,
    )
    loss, metrics = fn(args, batch, packed_logits(logits, piece.tokens), reducer)
    scale = 1.0 / max(denominator, 1.0)
    out = {k: float(torch.as_tensor(v).float().sum()) * scale for k, v in (metrics or {}).items()}
    out.setdefault("loss", float(loss.detach()) * scale)
    return loss * scale, out


def policy_loss_function(args: Any, batch: dict[str, Any], logits: torch.Tensor, sum_of_sample_mean: Reducer):
    """A plain PPO-clip loss written against slime's custom-loss signature: the contract's reference."""
    from vime.algorithms.policy_loss import ppo_clip_loss

    _, out = get_log_probs_and_entropy(
        logits,
        args=args,
        unconcat_tokens=batch["unconcat_tokens"],
        total_lengths=batch["total_lengths"],
        response_lengths=batch["response_lengths"],
    )
    log_probs = torch.cat(out["log_probs"])
    old = torch.cat(batch["log_probs"]) if batch.get("log_probs") else log_probs.detach()
    result = ppo_clip_loss(
        log_probs, old, torch.cat(batch["advantages"]), HookFlags.from_args(args).eps_clip, None
    )
    loss = sum_of_sample_mean(result.loss)
    return loss, {"loss": loss.detach(), "pg_clipfrac": sum_of_sample_mean(result.clipfrac)}


# ----- advantages --------------------------------------------------------------------------------
def rollout_data_for_advantages(batch: TrainBatch, kl: list[torch.Tensor]) -> dict[str, Any]:
    """What slime's ``compute_advantages_and_returns`` reads, for this rank's samples."""
    data = slime_batch(batch)
    data["kl"] = kl
    return data


def grpo_advantage_function(args: Any, rollout_data: dict[str, Any]) -> None:
    """GRPO's advantage with slime's hook signature: each token gets its sample's (normalized) reward."""
    advantages = [
        torch.full_like(kl, float(reward), dtype=torch.float32)
        for reward, kl in zip(rollout_data["rewards"], rollout_data["kl"], strict=True)
    ]
    rollout_data["advantages"] = advantages
    rollout_data["returns"] = [a.clone() for a in advantages]


def custom_advantages(path: str, args: Namespace, batch: TrainBatch, kl: list[torch.Tensor]) -> None:
    """Run ``--custom-advantage-function-path``; its advantages (and returns) go into ``batch.computed``."""
    data = rollout_data_for_advantages(batch, kl)
    load_function(path)(args, data)
    for key in ("advantages", "returns"):
        values = data.get(key)
        if values is None or len(values) != len(batch):
            raise ValueError(f"{path} must set rollout_data[{key!r}]: one tensor per sample ({len(batch)})")
        for i, (value, length) in enumerate(zip(values, batch.response_lengths, strict=True)):
            if torch.as_tensor(value).numel() != length:
                raise ValueError(
                    f"{path}: {key}[{i}] has {torch.as_tensor(value).numel()} entries for {length} tokens"
                )
        batch.computed[key] = [torch.as_tensor(v, dtype=torch.float32).detach() for v in values]
