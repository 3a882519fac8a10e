"""The actor's loss for one micro-batch, shared by every training backend.

Backends compute log-probs (and entropy) their own way, then call :func:`actor_loss`
with padded ``[batch, tokens]`` tensors and the global denominator of the whole step.
Every returned metric is this piece's share of a global mean, so summing the pieces'
metrics (across micro-batches and ranks) gives the global value.
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable
from dataclasses import dataclass

import torch

from vime.algorithms.aggregation import aggregate
from vime.algorithms.estimators import estimator
from vime.algorithms.kl import approx_kl
from vime.algorithms.loss_select import sft_loss
from vime.algorithms.policy_loss import IMPORTANCE_WEIGHTS, cispo_loss, gspo_loss, ppo_clip_loss
from vime.utils.args.defaults import config_from_args


def agg_mode_for(per_token_loss: bool) -> str:
    """``--calculate-per-token-loss``: one mean over every token, else the mean of per-sample means."""
    return "token_mean" if per_token_loss else "seq_mean_token_mean"


@dataclass(frozen=True)
class LossConfig:
    """The algorithm settings the loss needs (from the parsed arguments)."""

    kind: str = "ppo"  # ppo | gspo | cispo
    loss_type: str = "policy_loss"  # policy_loss | sft_loss (custom_loss is the backend's: it needs logits)
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
    tis_mode: str = "truncate"  # truncate (TIS) | mask (MIS)

    def __post_init__(self) -> None:
        if self.tis_mode not in IMPORTANCE_WEIGHTS:
            raise ValueError(
                f"--tis-mode must be one of {', '.join(IMPORTANCE_WEIGHTS)}, not {self.tis_mode!r}"
            )

    @classmethod
    def from_args(cls, args: Namespace) -> LossConfig:
        return config_from_args(
            cls,
            args,
            dests={
                "kind": ("advantage_estimator", lambda name: estimator(name).policy_loss),
                "agg_mode": ("calculate_per_token_loss", agg_mode_for),
            },
        )


@dataclass(frozen=True)
class LossHooks:
    """Replacements for pieces of :func:`actor_loss`, on padded ``[batch, tokens]`` tensors.

    ``tis(pg_loss, old_log_probs, rollout_log_probs, loss_mask) -> (pg_loss, kept_mask, metrics)``;
    ``pg_reduce(pg_loss, loss_mask) -> scalar``, this piece's share of the global mean.
    """

    tis: Callable[..., tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]] | None = None
    pg_reduce: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None


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
    hooks: LossHooks | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Return (loss to backpropagate, metrics) for one piece of the global batch.

    ``hooks`` replace truncated importance sampling and the policy loss's reduction
    (``--custom-tis-function-path``, ``--custom-pg-loss-reducer-function-path``).
    """
    if cfg.loss_type == "sft_loss":  # --loss-type sft_loss: the masked NLL alone
        return sft_loss(log_probs, loss_mask, cfg.agg_mode, denominator)
    hooks = hooks or LossHooks()
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
    if cfg.use_tis and hooks.tis is not None:
        if rollout_log_probs is None:
            raise ValueError("--use-tis needs the rollout engine's log-probs on every sample")
        pg_token_loss, kept, tis_metrics = hooks.tis(
            pg_token_loss, old_log_probs, rollout_log_probs, loss_mask
        )
        # rejected tokens leave the numerator; denominators stay those of the original mask (slime)
        pg_token_loss = pg_token_loss * kept.to(pg_token_loss.dtype)
        metrics |= {key: agg(value).item() for key, value in tis_metrics.items()}
    elif cfg.use_tis:
        if rollout_log_probs is None:
            raise ValueError("--use-tis needs the rollout engine's log-probs on every sample")
        weigh = IMPORTANCE_WEIGHTS[cfg.tis_mode]
        tis = weigh(old_log_probs, rollout_log_probs, cfg.tis_clip, cfg.tis_clip_low)
        # masked tokens leave the numerator; denominators stay those of the loss mask (slime)
        pg_token_loss = pg_token_loss * tis.weights
        metrics |= {
            "tis": agg(tis.weights).item(),
            "tis_clipfrac": agg(tis.clipfrac).item(),
            "tis_abs_log_ratio": agg(torch.log(tis.raw_ratio).abs()).item(),
        }
    if rollout_log_probs is not None:
        metrics["train_rollout_kl"] = agg(approx_kl(old_log_probs, rollout_log_probs, "k3")).item()
        metrics["train_rollout_logprob_abs_diff"] = agg((old_log_probs - rollout_log_probs).abs()).item()

    pg_loss = agg(pg_token_loss) if hooks.pg_reduce is None else hooks.pg_reduce(pg_token_loss, loss_mask)
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
