"""RL algorithms shared by every training backend: advantages, losses, KL, aggregation."""

from vime.algorithms.advantages import (
    gae_advantages,
    group_normalized_rewards,
    grpo_advantages,
    masked_whiten,
    reinforce_plus_plus_advantages,
    token_rewards,
)
from vime.algorithms.aggregation import AGG_MODES, aggregate, global_denominator, masked_mean
from vime.algorithms.estimators import ESTIMATOR_TABLE, ESTIMATORS, Estimator, estimator
from vime.algorithms.kl import (
    KL_ESTIMATORS,
    AdaptiveKLController,
    FixedKLController,
    approx_kl,
    make_kl_controller,
)
from vime.algorithms.loss import LossConfig, actor_loss
from vime.algorithms.policy_loss import (
    cispo_loss,
    entropy_from_logits,
    gspo_loss,
    ppo_clip_loss,
    truncated_importance_weights,
    value_loss,
)

__all__ = [
    "AGG_MODES",
    "ESTIMATORS",
    "ESTIMATOR_TABLE",
    "KL_ESTIMATORS",
    "AdaptiveKLController",
    "Estimator",
    "FixedKLController",
    "LossConfig",
    "actor_loss",
    "aggregate",
    "approx_kl",
    "cispo_loss",
    "entropy_from_logits",
    "estimator",
    "gae_advantages",
    "global_denominator",
    "group_normalized_rewards",
    "grpo_advantages",
    "gspo_loss",
    "make_kl_controller",
    "masked_mean",
    "masked_whiten",
    "ppo_clip_loss",
    "reinforce_plus_plus_advantages",
    "token_rewards",
    "truncated_importance_weights",
    "value_loss",
]
