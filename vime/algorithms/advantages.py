"""Advantage estimators: GRPO (also used by GSPO and CISPO), REINFORCE++ and PPO's GAE.

Tensors are padded ``[batch, response_tokens]`` with a 0/1 ``loss_mask``; a sample's
scalar reward belongs to its last unmasked response token. Samples of one prompt are
consecutive (``group_size`` = ``--n-samples-per-prompt``).
"""

from __future__ import annotations

import torch
import torch.distributed as dist


def group_normalized_rewards(
    rewards: torch.Tensor, group_size: int, normalize_std: bool = True, eps: float = 1e-6
) -> torch.Tensor:
    """GRPO's group baseline: ``(r - mean(group)) / (std(group) + eps)``, std unbiased (n - 1)."""
    if rewards.numel() % group_size:
        raise ValueError(f"{rewards.numel()} rewards do not split into groups of {group_size}")
    grouped = rewards.float().view(-1, group_size)
    centered = grouped - grouped.mean(-1, keepdim=True)
    if normalize_std and group_size > 1:
        std = grouped.std(-1, keepdim=True)
        centered = torch.where(std > 0, centered / (std + eps), torch.zeros_like(centered))
    return centered.view(-1)


def broadcast_to_tokens(per_sample: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """Give every response token its sample's scalar (zero on masked tokens)."""
    return per_sample.float().unsqueeze(-1) * loss_mask.float()


def last_token_index(loss_mask: torch.Tensor) -> torch.Tensor:
    """Index of the last unmasked token of each row (0 for an empty row)."""
    positions = torch.arange(loss_mask.shape[-1], device=loss_mask.device).expand_as(loss_mask)
    return torch.where(loss_mask.bool(), positions, torch.zeros_like(positions)).max(-1).values


def token_rewards(
    rewards: torch.Tensor, loss_mask: torch.Tensor, kl: torch.Tensor | None = None, kl_coef: float = 0.0
) -> torch.Tensor:
    """Per-token rewards: ``-kl_coef * kl`` on every token, plus the scalar reward on the last one."""
    out = torch.zeros_like(loss_mask, dtype=torch.float32)
    if kl is not None and kl_coef:
        out = out - kl_coef * kl.float() * loss_mask.float()
    rows = torch.arange(loss_mask.shape[0], device=loss_mask.device)
    out[rows, last_token_index(loss_mask)] += rewards.float()
    return out * loss_mask.float()


def discounted_returns(
    per_token_rewards: torch.Tensor, loss_mask: torch.Tensor, gamma: float
) -> torch.Tensor:
    """``G_t = r_t + gamma * G_{t+1}`` along each row (right padding carries zero reward)."""
    returns = torch.zeros_like(per_token_rewards)
    running = torch.zeros(per_token_rewards.shape[0], dtype=per_token_rewards.dtype)
    for t in reversed(range(per_token_rewards.shape[-1])):
        running = per_token_rewards[:, t] + gamma * running
        returns[:, t] = running
    return returns * loss_mask.float()


def masked_whiten(
    values: torch.Tensor, loss_mask: torch.Tensor, group: dist.ProcessGroup | None = None, eps: float = 1e-8
) -> torch.Tensor:
    """Whiten over every unmasked token of the *global* batch (statistics all-reduced over ``group``)."""
    mask = loss_mask.float()
    stats = torch.stack([(values * mask).sum(), (values.pow(2) * mask).sum(), mask.sum()]).double()
    if group is not None or (dist.is_available() and dist.is_initialized()):
        dist.all_reduce(stats, group=group)
    total, total_sq, count = stats.tolist()
    mean = total / max(count, 1.0)
    var = max(total_sq / max(count, 1.0) - mean * mean, 0.0)
    return (values - mean) / (var**0.5 + eps) * mask


def grpo_advantages(
    rewards: torch.Tensor, loss_mask: torch.Tensor, group_size: int, normalize_std: bool = True
) -> torch.Tensor:
    """GRPO: each token of a response gets the group-normalized reward of that response."""
    return broadcast_to_tokens(group_normalized_rewards(rewards, group_size, normalize_std), loss_mask)


def reinforce_plus_plus_advantages(
    rewards: torch.Tensor,
    loss_mask: torch.Tensor,
    kl: torch.Tensor | None,
    kl_coef: float,
    gamma: float = 1.0,
    group_size: int | None = None,
    group: dist.ProcessGroup | None = None,
) -> torch.Tensor:
    """REINFORCE++ (Hu, 2025): KL-shaped token rewards, discounted returns, whitened over the global batch.

    With ``group_size`` (the "baseline" variant) the group's mean reward is subtracted first.
    """
    if group_size is not None:
        rewards = group_normalized_rewards(rewards, group_size, normalize_std=False)
    returns = discounted_returns(token_rewards(rewards, loss_mask, kl, kl_coef), loss_mask, gamma)
    return masked_whiten(returns, loss_mask, group)


def gae_advantages(
    per_token_rewards: torch.Tensor, values: torch.Tensor, loss_mask: torch.Tensor, gamma: float, lambd: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalized advantage estimation (Schulman et al., 2016); returns (advantages, returns).

    ``delta_t = r_t + gamma * V_{t+1} - V_t`` and ``A_t = delta_t + gamma * lambd * A_{t+1}``,
    with V beyond the last response token taken as 0. Returns are ``A + V`` (the critic's target).
    """
    mask = loss_mask.float()
    values = values.float() * mask
    advantages = torch.zeros_like(values)
    next_value = torch.zeros(values.shape[0])
    next_adv = torch.zeros(values.shape[0])
    for t in reversed(range(values.shape[-1])):
        delta = per_token_rewards[:, t] + gamma * next_value - values[:, t]
        adv = (delta + gamma * lambd * next_adv) * mask[:, t]
        advantages[:, t] = adv
        # a masked token passes the running values through untouched
        next_value = torch.where(mask[:, t].bool(), values[:, t], next_value)
        next_adv = torch.where(mask[:, t].bool(), adv, next_adv)
    return advantages, (advantages + values) * mask
