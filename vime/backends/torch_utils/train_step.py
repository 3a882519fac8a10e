"""One rollout's training on one rank: old/ref log-probs, values, advantages, optimizer steps.

Each rank holds a shard of every step's global batch; denominators and metrics are summed
over ranks, so results do not depend on the number of ranks (see vime.algorithms.aggregation).
"""

from __future__ import annotations

from argparse import Namespace
from collections import defaultdict
from collections.abc import Callable

import torch
import torch.distributed as dist
from torch import nn

from vime.algorithms import (
    LossConfig,
    actor_loss,
    aggregate,
    global_denominator,
    value_loss,
)
from vime.backends.loss_hooks import loss_hooks_for
from vime.backends.torch_utils.forward import response_logprobs, response_values
from vime.backends.torch_utils.training_modes import custom_forward_loss, sft_forward_loss
from vime.backends.train_data import TrainBatch, pad_2d, unpad


def all_reduce_sum(values: list[float]) -> list[float]:
    """Sum floats over every rank (a no-op in a single process)."""
    if not (dist.is_initialized() and dist.get_world_size() > 1):
        return values
    tensor = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(tensor)
    return tensor.tolist()


def micro_batches(indices: list[int], size: int) -> list[list[int]]:
    return [indices[i : i + size] for i in range(0, len(indices), size)]


def _groups(batch: TrainBatch, micro_batch_size: int, groups: list[list[int]] | None) -> list[list[int]]:
    return groups if groups is not None else micro_batches(list(range(len(batch))), micro_batch_size)


def _in_order(values: dict[int, torch.Tensor], n: int) -> list[torch.Tensor]:
    return [values[i] for i in range(n)]


@torch.no_grad()
def _idle_forwards(model: nn.Module, count: int) -> None:
    """Forwards on one token that keep this rank's FSDP collectives in step with ranks that have
    more micro-batches (dynamic batching can give ranks different counts in a forward pass)."""
    for _ in range(count):
        model(
            input_ids=torch.zeros(1, 1, dtype=torch.long), attention_mask=torch.ones(1, 1, dtype=torch.long)
        )


@torch.no_grad()
def batched_logprobs(
    model: nn.Module,
    batch: TrainBatch,
    micro_batch_size: int,
    temperature: float,
    groups: list[list[int]] | None = None,
    idle_forwards: int = 0,
):
    """Response log-probs of every sample, one unpadded tensor each, in ``batch`` order.

    ``groups`` (indices into ``batch``) are the micro-batches (vime.backends.micro_batches);
    without them, fixed chunks of ``micro_batch_size``.
    """
    out: dict[int, torch.Tensor] = {}
    for chunk in _groups(batch, micro_batch_size, groups):
        piece = batch.select(chunk)
        log_probs, _ = response_logprobs(model, piece.tokens, piece.response_lengths, temperature=temperature)
        out.update(zip(chunk, unpad(log_probs, piece.response_lengths), strict=True))
    _idle_forwards(model, idle_forwards)
    return _in_order(out, len(batch))


@torch.no_grad()
def batched_values(
    critic: nn.Module,
    batch: TrainBatch,
    micro_batch_size: int,
    groups: list[list[int]] | None = None,
    idle_forwards: int = 0,
) -> list[torch.Tensor]:
    out: dict[int, torch.Tensor] = {}
    for chunk in _groups(batch, micro_batch_size, groups):
        piece = batch.select(chunk)
        values = unpad(response_values(critic, piece.tokens, piece.response_lengths), piece.response_lengths)
        out.update(zip(chunk, values, strict=True))
    _idle_forwards(critic, idle_forwards)
    return _in_order(out, len(batch))


def _clip_and_step(params, optimizer, scheduler, clip: float) -> float:
    grad_norm = torch.nn.utils.clip_grad_norm_(params, clip if clip > 0 else float("inf"))
    if hasattr(grad_norm, "full_tensor"):
        grad_norm = grad_norm.full_tensor()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if scheduler is not None:
        scheduler.step()
    return float(grad_norm)


def run_optimizer_steps(
    args: Namespace,
    batch: TrainBatch,
    steps: list[list[list[int]]],
    world_size: int,
    forward_loss: Callable[[TrainBatch, float], tuple[torch.Tensor, dict[str, float]]],
    params,
    optimizer,
    scheduler,
    agg_mode: str,
) -> dict[str, float]:
    """For each step: micro-batch forward/backward with the global denominator, then one update.

    ``steps[s]`` holds step s's micro-batches on this rank (indices into ``batch``), planned by
    vime.backends.micro_batches. Returned metrics are global means over the steps.
    """
    totals: dict[str, float] = defaultdict(float)
    for step in steps:
        piece_mask = pad_2d([batch.loss_masks[i] for chunk in step for i in chunk])
        (denominator,) = all_reduce_sum([global_denominator(piece_mask, agg_mode)])
        for chunk in step:
            loss, metrics = forward_loss(batch.select(chunk), denominator)
            # DDP and FSDP average gradients over ranks; the loss is already this rank's share
            # of the global mean, so undo the averaging to get the global sum.
            (loss * world_size).backward()
            for key, value in metrics.items():
                totals[key] += value
        totals["grad_norm"] += _clip_and_step(params, optimizer, scheduler, args.clip_grad) / len(steps)
    grad_norm = totals.pop("grad_norm")
    keys = sorted(totals)
    reduced = all_reduce_sum([totals[k] for k in keys])
    out = {k: v / len(steps) for k, v in zip(keys, reduced, strict=True)}
    out["grad_norm"] = grad_norm
    return out


def actor_forward_loss(model: nn.Module, cfg: LossConfig, args: Namespace):
    """The actor's per-micro-batch loss closure for :func:`run_optimizer_steps` (``--loss-type``)."""
    if cfg.loss_type == "sft_loss":
        return sft_forward_loss(model, args, cfg.agg_mode)
    if cfg.loss_type == "custom_loss":
        return custom_forward_loss(model, args)

    def forward(piece: TrainBatch, denominator: float):
        log_probs, entropy = response_logprobs(
            model,
            piece.tokens,
            piece.response_lengths,
            with_entropy=True,
            temperature=args.rollout_temperature,
        )
        rollout_lp = pad_2d(piece.rollout_log_probs) if piece.rollout_log_probs is not None else None
        ref_lp = pad_2d(piece.computed["ref_log_probs"]) if "ref_log_probs" in piece.computed else None
        return actor_loss(
            cfg,
            log_probs,
            pad_2d(piece.computed["old_log_probs"]),
            pad_2d(piece.computed["advantages"]),
            pad_2d(piece.loss_masks),
            denominator,
            entropy=entropy,
            ref_log_probs=ref_lp,
            rollout_log_probs=rollout_lp,
            hooks=loss_hooks_for(args, piece, denominator),
        )

    return forward


def critic_forward_loss(critic: nn.Module, args: Namespace, agg_mode: str):
    """The critic's clipped value loss closure."""

    def forward(piece: TrainBatch, denominator: float):
        mask = pad_2d(piece.loss_masks)
        values = response_values(critic, piece.tokens, piece.response_lengths)
        losses, clipfrac = value_loss(
            values, pad_2d(piece.computed["values"]), pad_2d(piece.computed["returns"]), args.value_clip
        )
        loss = aggregate(losses, mask, agg_mode, denominator)
        return loss, {
            "value_loss": loss.item(),
            "value_clipfrac": aggregate(clipfrac, mask, agg_mode, denominator).item(),
        }

    return forward
