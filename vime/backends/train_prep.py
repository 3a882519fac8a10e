"""A train step's preparation, the same for both training backends: old, reference and teacher
log-probs, the rollout-data hook, the critic's values, then advantages (and returns).

Each backend hands :func:`prepare_train_step` its own forward passes (:class:`PrepPasses`); which
advantage formula applies and whether ``--normalize-advantages`` whitens comes from the estimator
table (vime.algorithms.estimators), the settings from one :class:`AdvantageConfig` per train step.
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable
from dataclasses import dataclass

import torch

from vime.algorithms import (
    approx_kl,
    gae_advantages,
    masked_whiten,
    reinforce_plus_plus_advantages,
    token_rewards,
)
from vime.algorithms.aggregation import masked_mean
from vime.algorithms.estimators import Estimator, estimator
from vime.algorithms.opd import OpdConfig, apply_opd_to_advantages
from vime.backends.loss_hooks import custom_advantages
from vime.backends.micro_batches import BatchingConfig, RankShare, rank_shares
from vime.backends.train_data import (
    TrainBatch,
    apply_rollout_data_postprocess,
    pad_2d,
    set_old_log_probs,
    unpad,
)
from vime.utils.args.defaults import config_from_args


@dataclass(frozen=True)
class AdvantageConfig:
    """The flags the advantage computation reads, once per train step."""

    advantage_estimator: str = "grpo"
    compute_advantages_and_returns: bool = True  # False: SFT, or a custom loss that needs none
    custom_advantage_function_path: str | None = None
    gamma: float = 1.0
    lambd: float = 1.0
    normalize_advantages: bool = False

    @classmethod
    def from_args(cls, args: Namespace) -> AdvantageConfig:
        return config_from_args(cls, args)

    @property
    def estimator(self) -> Estimator:
        return estimator(self.advantage_estimator)


def teacher_log_probs(batch: TrainBatch) -> list[torch.Tensor] | None:
    """The teacher's log-probs of each response: scored by the trainer's teacher, or by the engine."""
    if "teacher_log_probs" in batch.computed:
        return batch.computed["teacher_log_probs"]
    rows = batch.extras.get("teacher_log_probs")
    if rows is None or any(r is None for r in rows):
        return None
    return [torch.as_tensor(r, dtype=torch.float32) for r in rows]


def opd_advantage_shift(cfg: OpdConfig, batch: TrainBatch) -> tuple[torch.Tensor | None, dict[str, float]]:
    """``-opd_kl_coef * (log p_student - log p_teacher)`` per token (padded), and its mean reverse KL."""
    if not cfg.enabled:
        return None, {}
    teacher = teacher_log_probs(batch)
    if teacher is None:
        raise ValueError(
            f"--use-opd --opd-type {cfg.kind}: the batch has no teacher log-probs; with vllm score the samples "
            "with --custom-rm-path vime.rollout.on_policy_distillation.reward_func"
        )
    student = batch.computed["old_log_probs"]
    zeros = [torch.zeros_like(s, dtype=torch.float32) for s in student]
    kls = apply_opd_to_advantages(zeros, student, teacher, cfg.kl_coef)
    mask = pad_2d(batch.loss_masks)
    shift = pad_2d(zeros) * mask
    return shift, {"opd_reverse_kl": masked_mean(pad_2d(kls), mask).item()}


def compute_advantages(args: Namespace, batch: TrainBatch, kl_coef: float) -> dict[str, float]:
    """Fill ``advantages`` (and ``returns`` for PPO) in ``batch.computed``; return KL statistics."""
    cfg = AdvantageConfig.from_args(args)
    mask = pad_2d(batch.loss_masks)
    rewards = torch.tensor(batch.rewards, dtype=torch.float32)
    kl = None
    stats: dict[str, float] = {}
    if "ref_log_probs" in batch.computed and "old_log_probs" in batch.computed:  # (not when in_loss)
        kl = approx_kl(pad_2d(batch.computed["old_log_probs"]), pad_2d(batch.computed["ref_log_probs"]), "k1")
        stats["reward_kl"] = masked_mean(kl, mask).item()
    if not cfg.compute_advantages_and_returns:
        batch.computed["advantages"] = [torch.zeros(n) for n in batch.response_lengths]
        return stats
    row = cfg.estimator
    returns = None
    if cfg.custom_advantage_function_path:
        zero = torch.zeros_like(mask)
        path = cfg.custom_advantage_function_path
        custom_advantages(path, args, batch, unpad(kl if kl is not None else zero, batch.response_lengths))
        advantages = pad_2d(batch.computed["advantages"])
        returns = pad_2d(batch.computed["returns"])
    elif row.advantage == "reward":
        advantages = rewards.unsqueeze(-1) * mask
    elif row.advantage == "reinforce":
        # rewards were already centred per group by the post-process hook for the baseline variant
        advantages = reinforce_plus_plus_advantages(rewards, mask, kl, kl_coef, cfg.gamma)
    else:  # "gae"
        values = pad_2d(batch.computed["values"])
        per_token = token_rewards(rewards, mask, kl, kl_coef)
        advantages, returns = gae_advantages(per_token, values, mask, cfg.gamma, cfg.lambd)
    opd_shift, opd_stats = opd_advantage_shift(OpdConfig.from_args(args), batch)
    if opd_shift is not None:  # on-policy distillation, on top of the estimator (slime: before whitening)
        advantages, stats = advantages + opd_shift, stats | opd_stats
    if cfg.normalize_advantages and row.whitened:
        advantages = masked_whiten(advantages, mask)
    batch.computed["advantages"] = unpad(advantages, batch.response_lengths)
    if returns is not None:
        batch.computed["returns"] = unpad(returns, batch.response_lengths)
    return stats


LogProbs = Callable[[TrainBatch], list[torch.Tensor]]


def own_share(
    batch: TrainBatch, global_batch_size: int, ranks: int, rank: int, batching: BatchingConfig
) -> tuple[RankShare, TrainBatch]:
    """This rank's share of the rollout and its samples: the share the rollout manager sent, or, for
    a backend given the whole batch, the share the manager would have picked (``rank_shares``)."""
    if batch.share is not None:
        return batch.share, batch
    share = rank_shares([len(t) for t in batch.tokens], global_batch_size, ranks, batching)[rank]
    return share, batch.select(share.order)


@dataclass(frozen=True)
class PrepPasses:
    """A backend's own forward passes over its share of the rollout, for :func:`prepare_train_step`.

    ``policy``: the policy's response log-probs. The others are None where the backend has no such
    model: ``reference`` (``--kl-coef``/``--use-kl-loss``), ``teacher`` (OPD in the trainer),
    ``values`` (the critic). ``old_actor(batch, recomputed)`` returns the old log-probs taken
    against the weights that generated each sample (``--keep-old-actor``) and how many samples
    fell back to ``recomputed``.
    """

    policy: LogProbs
    reference: LogProbs | None = None
    teacher: LogProbs | None = None
    values: LogProbs | None = None
    old_actor: Callable[[TrainBatch, list[torch.Tensor]], tuple[list[torch.Tensor], int]] | None = None


def prepare_train_step(
    args: Namespace,
    rollout_id: int,
    local: TrainBatch,
    passes: PrepPasses,
    old_source: str,
    kl_coef: float,
) -> tuple[dict[str, float], int | None]:
    """Everything before the optimizer steps, in slime's order: the old log-probs (``old_source``
    from :func:`vime.backends.train_data.old_log_probs_source`, or ``recompute``), the reference
    and teacher log-probs, the rollout-data hook, the critic's values, then the advantages.

    Returns the advantage step's metrics and the old actor's fallback count (None without one).
    """
    fallback = None
    if old_source == "rollout":
        local.computed["old_log_probs"] = [torch.tensor(lp) for lp in local.rollout_log_probs or []]
    elif old_source == "recompute":
        recomputed = passes.policy(local)
        set_old_log_probs(local, recomputed, args.use_rollout_logprobs)
        if passes.old_actor is not None and not args.use_rollout_logprobs:
            local.computed["old_log_probs"], fallback = passes.old_actor(local, recomputed)
    if passes.reference is not None:
        local.computed["ref_log_probs"] = passes.reference(local)
    if passes.teacher is not None:
        local.computed["teacher_log_probs"] = passes.teacher(local)
    if args.rollout_data_postprocess_path:
        apply_rollout_data_postprocess(args.rollout_data_postprocess_path, args, rollout_id, local)
    if passes.values is not None:
        local.computed["values"] = passes.values(local)
    return compute_advantages(args, local, kl_coef), fallback
