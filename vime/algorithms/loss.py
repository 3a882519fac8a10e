"""The actor's loss for one micro-batch, shared by every training backend.

Backends compute log-probs (and entropy) their own way, then call :func:`actor_loss`
with padded ``[batch, tokens]`` tensors and the global denominator of the whole step.
Every returned metric is this piece's share of a global mean, so summing the pieces'
metrics (across micro-batches and ranks) gives the global value.
"""

from __future__ import annotations

from argparse import Namespace
from dataclasses import dataclass

import torch

from vime.algorithms.aggregation import aggregate
from vime.algorithms.kl import approx_kl
from vime.algorithms.policy_loss import cispo_loss, gspo_loss, ppo_clip_loss, truncated_importance_weights
from vime.utils.args.defaults import flag_value


@dataclass(frozen=True)
class LossConfig:
    """The algorithm settings the loss needs (from the parsed arguments)."""

    kind: str = "ppo"  # ppo | gspo | cispo
    eps_clip: float = 0.2
    eps_clip_high: float | None = None
    eps_clip_c: float | None = None
    agg_mode: str = "seq_mean_token_mean"
    entropy_coef: float = 0.0
    use_kl_loss: bool = False
    kl_loss_coef: float = 0.0
    kl_loss_type: str = "k3"
    use_tis: bool = False
    tis_clip: float = 2.0
    tis_clip_low: float = 0.0

    @classmethod
    def from_args(cls, args: Namespace) -> LossConfig:
        estimator = flag_value(args, "advantage_estimator")
        kind = estimator if estimator in ("gspo", "cispo") else "ppo"
        return cls(
            kind=kind,
            eps_clip=args.eps_clip,
            eps_clip_high=args.eps_clip_high,
            eps_clip_c=args.eps_clip_c,
            agg_mode="token_mean" if args.calculate_per_token_loss else "seq_mean_token_mean",
            entropy_coef=args.entropy_coef,
            use_kl_loss=args.use_kl_loss,
            kl_loss_coef=args.kl_loss_coef,
            kl_loss_type=args.kl_loss_type,
            use_tis=args.use_tis,
            tis_clip=args.tis_clip,
            tis_clip_low=args.tis_clip_low,
        )


def actor_loss(
    cfg: LossConfig,
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    loss_mask: torch.Tensor,
    denominator: float,
    entropy: torch.Tensor | None = None,
    ref_log_probs: torch.Tensor | None = None,
    rollout_log_probs: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Return (loss to backpropagate, metrics) for one piece of the global batch."""
    if cfg.kind == "gspo":
        out = gspo_loss(log_probs, old_log_probs, advantages, loss_mask, cfg.eps_clip, cfg.eps_clip_high)
    elif cfg.kind == "cispo":
        out = cispo_loss(log_probs, old_log_probs, advantages, cfg.eps_clip, cfg.eps_clip_high)
    else:
        out = ppo_clip_loss(
            log_probs, old_log_probs, advantages, cfg.eps_clip, cfg.eps_clip_high, cfg.eps_clip_c
        )

    def agg(values: torch.Tensor) -> torch.Tensor:
        return aggregate(values, loss_mask, cfg.agg_mode, denominator)

    pg_token_loss = out.loss
    metrics: dict[str, float] = {}
    if cfg.use_tis:
        if rollout_log_probs is None:
            raise ValueError("--use-tis needs the rollout engine's log-probs on every sample")
        tis = truncated_importance_weights(old_log_probs, rollout_log_probs, cfg.tis_clip, cfg.tis_clip_low)
        pg_token_loss = pg_token_loss * tis.weights
        metrics |= {
            "tis": agg(tis.weights).item(),
            "tis_clipfrac": agg(tis.clipfrac).item(),
            "tis_abs_log_ratio": agg(torch.log(tis.raw_ratio).abs()).item(),
        }
    if rollout_log_probs is not None:
        metrics["train_rollout_kl"] = agg(approx_kl(old_log_probs, rollout_log_probs, "k3")).item()
        metrics["train_rollout_logprob_abs_diff"] = agg((old_log_probs - rollout_log_probs).abs()).item()

    pg_loss = agg(pg_token_loss)
    loss = pg_loss
    metrics |= {
        "pg_loss": pg_loss.item(),
        "pg_clipfrac": agg(out.clipfrac).item(),
        "ppo_kl": agg(out.ppo_kl).item(),
    }
    if entropy is not None:
        entropy_loss = agg(entropy)
        metrics["entropy"] = entropy_loss.item()
        if cfg.entropy_coef:
            loss = loss - cfg.entropy_coef * entropy_loss
    if cfg.use_kl_loss:
        if ref_log_probs is None:
            raise ValueError("--use-kl-loss needs reference log-probs (a reference model)")
        kl_loss = agg(approx_kl(log_probs, ref_log_probs, cfg.kl_loss_type))
        loss = loss + cfg.kl_loss_coef * kl_loss
        metrics["kl_loss"] = kl_loss.item()
    metrics["loss"] = loss.item()
    return loss, metrics
