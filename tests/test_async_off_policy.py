"""Off-policy correction for stale samples, against references written out by hand (plain floats).

Three policies: the one being trained (theta), the proximal one (the trainer's weights at the start
of the step: vime's recomputed ``old_log_probs``) and the behaviour one (the engine's per-token
``rollout_log_probs``, whatever version wrote each token). AReaL's decoupled PPO objective
(Fu et al. 2025, eq. 5) is, per token,

    min( pi_theta / pi_behav * A,  clip(pi_theta / pi_prox, 1 - e, 1 + e_high) * pi_prox / pi_behav * A )

which is what ``--use-tis`` computes when the old log-probs are recomputed (the default): PPO's clipped
surrogate around pi_prox times the behaviour weight pi_prox / pi_behav, truncated to
[--tis-clip-low, --tis-clip] (TIS) or, with ``--tis-mode mask``, zero outside it (MIS).
"""

from __future__ import annotations

import math

import pytest
import torch

from vime.algorithms.loss import LossConfig, actor_loss

THETA = [[-1.0, -0.4, -2.2, -0.9], [-0.3, -1.7, -0.05, -1.1]]
PROX = [[-1.1, -0.5, -1.9, -0.9], [-0.6, -1.2, -0.1, -1.0]]
BEHAV = [[-1.3, -0.45, -0.8, -2.4], [-0.6, -1.25, -1.5, -0.2]]
ADV = [[1.0, -0.5, 0.8, -1.2], [0.3, 0.3, -0.7, 1.5]]
MASK = [[1, 1, 1, 0], [1, 1, 1, 1]]
EPS, EPS_HIGH = 0.2, 0.28


def _clip(x: float, low: float, high: float) -> float:
    return min(max(x, low), high)


def paper_objective(theta, prox, behav, adv) -> float:
    """Eq. 5 of the AReaL paper as written: two importance ratios against two policies."""
    to_behav = math.exp(theta - behav)
    to_prox = math.exp(theta - prox)
    prox_over_behav = math.exp(prox - behav)
    return min(to_behav * adv, _clip(to_prox, 1 - EPS, 1 + EPS_HIGH) * prox_over_behav * adv)


def factored_objective(theta, prox, behav, adv, weight) -> float:
    """The same, factored: the behaviour weight times PPO's clipped surrogate around pi_prox."""
    ratio = math.exp(theta - prox)
    return weight * min(ratio * adv, _clip(ratio, 1 - EPS, 1 + EPS_HIGH) * adv)


def hand_loss(token_objective) -> float:
    """Minus the token mean of the objective over the loss mask (vime's token_mean)."""
    values = [
        token_objective(THETA[i][t], PROX[i][t], BEHAV[i][t], ADV[i][t])
        for i in range(len(MASK))
        for t in range(len(MASK[i]))
        if MASK[i][t]
    ]
    return -sum(values) / len(values)


def vime_loss(tis_mode: str, clip: float, clip_low: float, theta=None) -> tuple[torch.Tensor, dict]:
    cfg = LossConfig(
        eps_clip=EPS,
        eps_clip_high=EPS_HIGH,
        agg_mode="token_mean",
        use_tis=True,
        tis_clip=clip,
        tis_clip_low=clip_low,
        tis_mode=tis_mode,
    )
    mask = torch.tensor(MASK, dtype=torch.float64)
    return actor_loss(
        cfg,
        torch.tensor(THETA, dtype=torch.float64) if theta is None else theta,
        torch.tensor(PROX, dtype=torch.float64),
        torch.tensor(ADV, dtype=torch.float64),
        mask,
        denominator=float(mask.sum()),
        rollout_log_probs=torch.tensor(BEHAV, dtype=torch.float64),
    )


def test_use_tis_is_the_decoupled_objective_of_the_paper():
    loss, _ = vime_loss("truncate", clip=1e9, clip_low=0.0)  # no truncation: the paper's form
    assert loss.item() == pytest.approx(
        hand_loss(paper_objective), rel=1e-6
    )  # the weights are computed in float32
    # the behaviour weights here reach 4.06 (row 2, token 3): the plain PPO loss is a different number
    plain = hand_loss(lambda th, pr, be, a: factored_objective(th, pr, be, a, 1.0))
    assert abs(loss.item() - plain) > 0.1


def test_truncated_behaviour_weights_by_hand():
    low, high = 0.5, 2.0

    def truncated(th, pr, be, a):
        return factored_objective(th, pr, be, a, _clip(math.exp(pr - be), low, high))

    loss, metrics = vime_loss("truncate", clip=high, clip_low=low)
    assert loss.item() == pytest.approx(hand_loss(truncated), rel=1e-6)  # the weights are computed in float32
    # weights pi_prox / pi_behav of the 7 trained tokens: 1.22, 0.95, 0.33 | 1.00, 1.05, 4.06, 0.45;
    # three lie outside [0.5, 2]
    assert metrics["tis_clipfrac"] == pytest.approx(3 / 7)


def test_masked_behaviour_weights_by_hand():
    low, high = 0.5, 2.0

    def masked(th, pr, be, a):
        weight = math.exp(pr - be)
        return factored_objective(th, pr, be, a, weight if low <= weight <= high else 0.0)

    loss, metrics = vime_loss("mask", clip=high, clip_low=low)
    assert loss.item() == pytest.approx(hand_loss(masked), rel=1e-6)  # the weights are computed in float32
    assert metrics["tis_clipfrac"] == pytest.approx(3 / 7)  # the masked share
    truncated, _ = vime_loss("truncate", clip=high, clip_low=low)
    assert abs(loss.item() - truncated.item()) > 1e-3  # masking is not truncating


def test_the_gradient_flows_through_theta_only():
    """d loss / d theta equals the hand reference's central difference: the weights are constants."""
    theta = torch.tensor(THETA, dtype=torch.float64, requires_grad=True)
    loss, _ = vime_loss("mask", clip=2.0, clip_low=0.5, theta=theta)
    loss.backward()
    step = 1e-6
    for i, t in ((0, 0), (0, 2), (1, 1), (1, 3)):

        def shifted(delta: float, i=i, t=t) -> float:
            THETA[i][t] += delta
            try:
                return hand_loss(
                    lambda th, pr, be, a: factored_objective(
                        th, pr, be, a, math.exp(pr - be) if 0.5 <= math.exp(pr - be) <= 2.0 else 0.0
                    )
                )
            finally:
                THETA[i][t] -= delta

        numeric = (shifted(step) - shifted(-step)) / (2 * step)
        assert theta.grad[i, t].item() == pytest.approx(numeric, abs=1e-6)


def test_tis_mode_reaches_the_loss_config_from_the_flags(tiny_model_dir):
    from vime.utils.arguments import parse_args

    args = parse_args(
        ["--preset", "tiny-cpu", "--hf-checkpoint", str(tiny_model_dir), "--use-tis", "--tis-mode", "mask"]
    )
    assert LossConfig.from_args(args).tis_mode == "mask"
    with pytest.raises(ValueError, match="--tis-mode"):
        LossConfig(tis_mode="clip")
