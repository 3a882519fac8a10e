"""RL algorithm: advantage estimator, policy loss, KL, entropy, importance sampling."""

from __future__ import annotations

import argparse

from vime.algorithms.estimators import ESTIMATORS
from vime.algorithms.kl import KL_ESTIMATORS
from vime.algorithms.policy_loss import TIS_MODES


def add_algorithm_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("algorithm")
    g.add_argument(
        "--advantage-estimator",
        choices=ESTIMATORS,
        default="grpo",
        help="How advantages are computed: grpo, gspo, cispo, reinforce_plus_plus(_baseline), ppo (GAE with a critic).",
    )
    g.add_argument(
        "--loss-type",
        choices=["policy_loss", "sft_loss", "custom_loss"],
        default="policy_loss",
        help="policy_loss (the RL loss), sft_loss (masked cross-entropy on the response tokens) or "
        "custom_loss (--custom-loss-function-path).",
    )
    g.add_argument(
        "--custom-loss-function-path",
        type=str,
        default=None,
        help="--loss-type custom_loss: fn(args, batch, logits, sum_of_sample_mean) -> (loss, metrics), "
        "slime's signature (vime/backends/loss_hooks.py says what batch holds).",
    )
    g.add_argument("--eps-clip", type=float, default=0.2, help="PPO clip range.")
    g.add_argument(
        "--eps-clip-high", type=float, default=None, help="Upper clip range (default: --eps-clip)."
    )
    g.add_argument(
        "--eps-clip-c", type=float, default=None, help="Dual-clip bound (> 1) for negative advantages."
    )
    g.add_argument("--value-clip", type=float, default=0.2, help="Clip of the critic's value loss.")
    g.add_argument(
        "--kl-coef", type=float, default=0.0, help="KL penalty folded into the reward (PPO, REINFORCE++)."
    )
    g.add_argument(
        "--kl-ctl", choices=["fixed", "adaptive"], default="fixed", help="vime: how --kl-coef evolves."
    )
    g.add_argument(
        "--kl-target", type=float, default=None, help="vime: target KL of the adaptive controller."
    )
    g.add_argument("--kl-horizon", type=int, default=None, help="vime: horizon of the adaptive controller.")
    g.add_argument(
        "--use-kl-loss", action="store_true", default=False, help="GRPO-style KL term in the loss."
    )
    g.add_argument(
        "--kl-loss-coef",
        type=float,
        default=0.0,
        help="Weight of the KL-to-reference term in the loss (with --use-kl-loss).",
    )
    g.add_argument(
        "--kl-loss-type",
        choices=KL_ESTIMATORS,
        default="k3",
        help="KL estimator of the loss term (see vime/algorithms/kl.py).",
    )
    g.add_argument("--entropy-coef", type=float, default=0.0, help="Entropy bonus coefficient.")
    g.add_argument("--gamma", type=float, default=1.0, help="Discount (GAE, REINFORCE++).")
    g.add_argument("--lambd", type=float, default=1.0, help="GAE lambda.")
    g.add_argument(
        "--normalize-advantages",
        action="store_true",
        default=False,
        help="Whiten advantages over the batch (not for the REINFORCE++ estimators, which do their own).",
    )
    g.add_argument(
        "--disable-grpo-std-normalization",
        action="store_false",
        dest="grpo_std_normalization",
        default=True,
        help="GRPO: subtract the group mean only, do not divide by the group's std (Dr. GRPO).",
    )
    g.add_argument(
        "--disable-rewards-normalization",
        action="store_false",
        dest="rewards_normalization",
        default=True,
        help="grpo/gspo/cispo/reinforce_plus_plus_baseline: train on the raw rewards, not centred (and "
        "scaled) within each prompt's group.",
    )
    g.add_argument(
        "--calculate-per-token-loss",
        action="store_true",
        default=False,
        help="Token mean over the global batch instead of the mean of per-sequence means.",
    )
    g.add_argument(
        "--use-rollout-logprobs", action="store_true", default=False, help="Old log-probs = rollout's."
    )
    g.add_argument("--use-tis", action="store_true", default=False, help="Truncated importance sampling.")
    g.add_argument(
        "--tis-clip",
        type=float,
        default=2.0,
        help="Truncated importance sampling (--use-tis): upper clip of the rollout/train ratio.",
    )
    g.add_argument(
        "--tis-clip-low",
        type=float,
        default=0.0,
        help="Truncated importance sampling (--use-tis): lower clip of the ratio.",
    )
    g.add_argument(
        "--tis-mode",
        choices=TIS_MODES,
        default="truncate",
        help="--use-tis: truncate the ratio to [--tis-clip-low, --tis-clip] (TIS), or mask the tokens "
        "whose ratio falls outside it out of the loss (MIS); slime's mis.yaml key of the same name.",
    )
    g.add_argument(
        "--num-critic-only-steps",
        type=int,
        default=0,
        help="PPO: train only the critic for the first N steps.",
    )
    g.add_argument(
        "--critic-lr", type=float, default=None, help="vime: critic learning rate (default: --lr)."
    )
    g.add_argument("--ref-load", type=str, default=None, help="Reference model (default: --hf-checkpoint).")
