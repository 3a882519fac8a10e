"""Per-token policy-gradient losses: PPO clip (with dual clip), GSPO, CISPO; entropy; TIS and MIS.

All take padded ``[batch, tokens]`` tensors; aggregation over tokens is left to
:mod:`vime.algorithms.aggregation` so the result does not depend on the DP split.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

LOSS_KINDS = ("ppo", "gspo", "cispo")


@dataclass
class PolicyLossOutput:
    """Per-token loss plus per-token diagnostics (aggregate them with the same mask)."""

    loss: torch.Tensor
    clipfrac: torch.Tensor
    ppo_kl: torch.Tensor  # old - new log-prob: 0 when the policy has not moved


def ppo_clip_loss(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    eps_clip: float,
    eps_clip_high: float | None = None,
    eps_clip_c: float | None = None,
) -> PolicyLossOutput:
    """PPO's clipped surrogate ``max(-r A, -clip(r, 1-e, 1+e_high) A)``.

    With ``eps_clip_c`` (dual-clip PPO, Ye et al. 2020) the loss of a negative-advantage token
    is further capped at ``-eps_clip_c * A``.
    """
    high = eps_clip if eps_clip_high is None else eps_clip_high
    ppo_kl = old_log_probs - log_probs
    ratio = torch.exp(-ppo_kl)
    unclipped = -ratio * advantages
    clipped = -ratio.clamp(1.0 - eps_clip, 1.0 + high) * advantages
    loss = torch.maximum(unclipped, clipped)
    clipfrac = (clipped > unclipped).float()
    if eps_clip_c is not None:
        if eps_clip_c <= 1.0:
            raise ValueError(f"--eps-clip-c must be greater than 1 for dual-clip PPO, got {eps_clip_c}")
        dual = torch.minimum(loss, -eps_clip_c * advantages)
        loss = torch.where(advantages < 0, dual, loss)
    return PolicyLossOutput(loss, clipfrac, ppo_kl.detach())


def gspo_loss(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    loss_mask: torch.Tensor,
    eps_clip: float,
    eps_clip_high: float | None = None,
) -> PolicyLossOutput:
    """GSPO (Zheng et al., 2025): clip a sequence-level ratio ``exp(mean_t(log p - log p_old))``.

    Every token of a sequence carries the same ratio value; the gradient reaches each token
    through ``exp(log p_t - sg(log p_t))`` so it equals the paper's sequence gradient.
    """
    mask = loss_mask.float()
    seq_log_ratio = ((log_probs - old_log_probs) * mask).sum(-1) / mask.sum(-1).clamp_min(1.0)
    token_log_ratio = seq_log_ratio.detach().unsqueeze(-1) + log_probs - log_probs.detach()
    out = ppo_clip_loss(token_log_ratio, torch.zeros_like(log_probs), advantages, eps_clip, eps_clip_high)
    out.ppo_kl = (-seq_log_ratio).detach().unsqueeze(-1).expand_as(log_probs)
    return out


def cispo_loss(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    eps_clip: float,
    eps_clip_high: float | None = None,
) -> PolicyLossOutput:
    """CISPO (MiniMax-M1, 2025): ``-sg(clip(r)) * A * log p``: clipped tokens keep their gradient."""
    high = eps_clip if eps_clip_high is None else eps_clip_high
    ppo_kl = old_log_probs - log_probs
    ratio = torch.exp(-ppo_kl)
    truncated = ratio.clamp(1.0 - eps_clip, 1.0 + high)
    loss = -truncated.detach() * advantages * log_probs
    return PolicyLossOutput(loss, (truncated != ratio).float(), ppo_kl.detach())


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of the softmax over the last dimension, ``logsumexp(z) - sum(softmax(z) z)``."""
    logits = logits.float()
    probs = torch.softmax(logits, dim=-1)
    return torch.logsumexp(logits, dim=-1) - (probs * logits).sum(-1)


@dataclass
class TISOutput:
    """Importance weights and the mismatch diagnostics that go with them (per token)."""

    weights: torch.Tensor
    clipfrac: torch.Tensor
    mismatch_kl: torch.Tensor  # k3 estimate of KL(rollout || train) per token
    raw_ratio: torch.Tensor


def truncated_importance_weights(
    train_log_probs: torch.Tensor, rollout_log_probs: torch.Tensor, clip: float = 2.0, clip_low: float = 0.0
) -> TISOutput:
    """Truncated importance sampling against the rollout engine's own log-probs.

    Tokens were sampled by the engine (pi_rollout) but the loss is built on the trainer's
    pi_old; ``w = clamp(pi_old / pi_rollout, clip_low, clip)`` corrects that mismatch
    (Yao et al., "Your efficient RL framework secretly brings you off-policy RL training", 2025).
    """
    log_ratio = (train_log_probs - rollout_log_probs).detach().float()
    raw = torch.exp(log_ratio)
    weights = raw.clamp(clip_low, clip)
    mismatch_kl = torch.expm1(log_ratio) - log_ratio
    return TISOutput(weights, (weights != raw).float(), mismatch_kl, raw)


def masked_importance_weights(
    train_log_probs: torch.Tensor, rollout_log_probs: torch.Tensor, clip: float = 2.0, clip_low: float = 0.0
) -> TISOutput:
    """Masked importance sampling (MIS): ``w = r`` where ``clip_low <= r <= clip``, else 0.

    ``r = pi_old / pi_rollout`` as in :func:`truncated_importance_weights`; a token whose ratio
    leaves the band leaves the loss's numerator instead of being clipped into it
    (``clipfrac`` counts the masked tokens).
    """
    log_ratio = (train_log_probs - rollout_log_probs).detach().float()
    raw = torch.exp(log_ratio)
    inside = (raw >= clip_low) & (raw <= clip)
    weights = torch.where(inside, raw, torch.zeros_like(raw))
    mismatch_kl = torch.expm1(log_ratio) - log_ratio
    return TISOutput(weights, (~inside).float(), mismatch_kl, raw)


IMPORTANCE_WEIGHTS = {"truncate": truncated_importance_weights, "mask": masked_importance_weights}
TIS_MODES = tuple(IMPORTANCE_WEIGHTS)


def value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, value_clip: float | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO critic loss ``0.5 * max((V - R)^2, (V_clipped - R)^2)``; returns (loss, clipfrac) per token."""
    unclipped = (values - returns).pow(2)
    if value_clip is None:
        return 0.5 * unclipped, torch.zeros_like(values)
    clipped_values = old_values + (values - old_values).clamp(-value_clip, value_clip)
    clipped = (clipped_values - returns).pow(2)
    return 0.5 * torch.maximum(unclipped, clipped), (clipped > unclipped).float()
