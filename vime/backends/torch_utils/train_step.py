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
    approx_kl,
    gae_advantages,
    global_denominator,
    masked_whiten,
    reinforce_plus_plus_advantages,
    token_rewards,
    value_loss,
)
from vime.algorithms.aggregation import masked_mean
from vime.backends.torch_utils.forward import response_logprobs, response_values
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


@torch.no_grad()
def batched_logprobs(model: nn.Module, batch: TrainBatch, micro_batch_size: int, temperature: float):
    """Response log-probs of every sample, one unpadded tensor each."""
    out: list[torch.Tensor] = []
    for chunk in micro_batches(list(range(len(batch))), micro_batch_size):
        piece = batch.select(chunk)
        log_probs, _ = response_logprobs(model, piece.tokens, piece.response_lengths, temperature=temperature)
        out.extend(unpad(log_probs, piece.response_lengths))
    return out


@torch.no_grad()
def batched_values(critic: nn.Module, batch: TrainBatch, micro_batch_size: int) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []
    for chunk in micro_batches(list(range(len(batch))), micro_batch_size):
        piece = batch.select(chunk)
        out.extend(
            unpad(response_values(critic, piece.tokens, piece.response_lengths), piece.response_lengths)
        )
    return out


def compute_advantages(args: Namespace, batch: TrainBatch, kl_coef: float) -> dict[str, float]:
    """Fill ``advantages`` (and ``returns`` for PPO) in ``batch.computed``; return KL statistics."""
    mask = pad_2d(batch.loss_masks)
    rewards = torch.tensor(batch.rewards, dtype=torch.float32)
    kl = None
    stats: dict[str, float] = {}
    if "ref_log_probs" in batch.computed:
        kl = approx_kl(pad_2d(batch.computed["old_log_probs"]), pad_2d(batch.computed["ref_log_probs"]), "k1")
        stats["reward_kl"] = masked_mean(kl, mask).item()
    estimator = args.advantage_estimator
    returns = None
    if estimator in ("grpo", "gspo", "cispo"):
        advantages = rewards.unsqueeze(-1) * mask
    elif estimator in ("reinforce_plus_plus", "reinforce_plus_plus_baseline"):
        # rewards were already centred per group by the post-process hook for the baseline variant
        advantages = reinforce_plus_plus_advantages(rewards, mask, kl, kl_coef, args.gamma)
    elif estimator == "ppo":
        values = pad_2d(batch.computed["values"])
        per_token = token_rewards(rewards, mask, kl, kl_coef)
        advantages, returns = gae_advantages(per_token, values, mask, args.gamma, args.lambd)
    else:
        raise ValueError(f"unknown --advantage-estimator {estimator!r}")
    if args.normalize_advantages and estimator not in ("reinforce_plus_plus", "reinforce_plus_plus_baseline"):
        advantages = masked_whiten(advantages, mask)
    batch.computed["advantages"] = unpad(advantages, batch.response_lengths)
    if returns is not None:
        batch.computed["returns"] = unpad(returns, batch.response_lengths)
    return stats


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
    steps: list[list[int]],
    world_size: int,
    forward_loss: Callable[[TrainBatch, float], tuple[torch.Tensor, dict[str, float]]],
    params,
    optimizer,
    scheduler,
    agg_mode: str,
) -> dict[str, float]:
    """For each step: micro-batch forward/backward with the global denominator, then one update.

    ``steps`` index into ``batch``. Returned metrics are global means over the steps.
    """
    totals: dict[str, float] = defaultdict(float)
    for step in steps:
        piece_mask = pad_2d([batch.loss_masks[i] for i in step])
        (denominator,) = all_reduce_sum([global_denominator(piece_mask, agg_mode)])
        for chunk in micro_batches(step, args.micro_batch_size):
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
    """The actor's per-micro-batch loss closure for :func:`run_optimizer_steps`."""

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
