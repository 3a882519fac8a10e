"""The RL algorithms against values worked out by hand (numbers in the comments)."""

import math

import pytest
import torch

from vime.algorithms import (
    AdaptiveKLController,
    FixedKLController,
    approx_kl,
    cispo_loss,
    entropy_from_logits,
    gae_advantages,
    group_normalized_rewards,
    grpo_advantages,
    gspo_loss,
    make_kl_controller,
    ppo_clip_loss,
    reinforce_plus_plus_advantages,
    token_rewards,
    truncated_importance_weights,
    value_loss,
)

LN2 = math.log(2.0)


def test_kl_estimators_match_hand_values():
    logp, ref = torch.tensor([math.log(0.5)]), torch.tensor([math.log(0.25)])
    assert approx_kl(logp, ref, "k1").item() == pytest.approx(LN2)  # log 2
    assert approx_kl(logp, ref, "k2").item() == pytest.approx(LN2**2 / 2)  # 0.2402
    assert approx_kl(logp, ref, "k3").item() == pytest.approx(0.5 - 1 + LN2)  # 0.1931
    assert approx_kl(torch.tensor([30.0]), torch.tensor([0.0]), "low_var_kl").item() == 10.0  # clamped
    with pytest.raises(ValueError, match="unknown KL estimator"):
        approx_kl(logp, ref, "k9")


def test_kl_controllers():
    fixed = FixedKLController(0.1)
    fixed.update(100.0, 10)
    assert fixed.value == 0.1
    up = AdaptiveKLController(0.1, target=6.0, horizon=10000)
    up.update(9.0, 100)  # error clip(9/6-1)=0.2 -> x(1 + 0.2*100/10000)
    assert up.value == pytest.approx(0.1002)
    down = AdaptiveKLController(0.1, target=6.0, horizon=10000)
    down.update(3.0, 100)  # error clip(-0.5)=-0.2
    assert down.value == pytest.approx(0.0998)
    assert isinstance(make_kl_controller("adaptive", 0.1, 6.0, 100), AdaptiveKLController)
    with pytest.raises(ValueError, match="--kl-target"):
        make_kl_controller("adaptive", 0.1)


def test_grpo_group_normalization():
    # group [1,0,0,0]: mean 0.25, unbiased std 0.5 -> [1.5, -0.5, -0.5, -0.5]
    adv = group_normalized_rewards(torch.tensor([1.0, 0, 0, 0, 2, 2, 2, 2]), 4, eps=0.0)
    assert adv[:4].tolist() == pytest.approx([1.5, -0.5, -0.5, -0.5])
    assert adv[4:].tolist() == [0.0] * 4  # an all-equal group teaches nothing
    assert group_normalized_rewards(torch.tensor([1.0, 0.0]), 2, normalize_std=False).tolist() == [0.5, -0.5]
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    tokens = grpo_advantages(torch.tensor([1.0, 0.0]), mask, 2, normalize_std=False)
    assert tokens.tolist() == [[0.5, 0.5, 0.0], [-0.5, 0.0, 0.0]]
    with pytest.raises(ValueError, match="groups of 3"):
        group_normalized_rewards(torch.ones(4), 3)


def test_ppo_clip_and_dual_clip():
    logp = torch.log(torch.tensor([1.5, 1.5, 5.0, 1.0]))
    old = torch.zeros(4)
    adv = torch.tensor([1.0, -1.0, -1.0, 1.0])
    out = ppo_clip_loss(logp, old, adv, eps_clip=0.2)
    # ratio 1.5, A=1: max(-1.5, -1.2) = -1.2 clipped; A=-1: max(1.5, 1.2)=1.5; ratio 5, A=-1: 5; ratio 1: -1
    assert out.loss.tolist() == pytest.approx([-1.2, 1.5, 5.0, -1.0])
    assert out.clipfrac.tolist() == [1.0, 0.0, 0.0, 0.0]
    dual = ppo_clip_loss(logp, old, adv, eps_clip=0.2, eps_clip_c=3.0)
    assert dual.loss.tolist() == pytest.approx([-1.2, 1.5, 3.0, -1.0])  # min(5, 3*1)
    asym = ppo_clip_loss(logp[:1], old[:1], adv[:1], eps_clip=0.2, eps_clip_high=0.28)
    assert asym.loss.item() == pytest.approx(-1.28)
    with pytest.raises(ValueError, match="eps-clip-c"):
        ppo_clip_loss(logp, old, adv, 0.2, eps_clip_c=0.5)


def test_cispo_keeps_gradient_of_clipped_tokens():
    logp = torch.tensor([math.log(1.5)], requires_grad=True)
    out = cispo_loss(logp, torch.zeros(1), torch.tensor([1.0]), eps_clip=0.2)
    assert out.loss.item() == pytest.approx(-1.2 * math.log(1.5))  # -sg(1.2) * A * log p
    out.loss.sum().backward()
    assert logp.grad.item() == pytest.approx(-1.2)  # PPO would give 0 here
    assert out.clipfrac.item() == 1.0


def test_gspo_sequence_ratio():
    old = torch.zeros(1, 2)
    mask = torch.ones(1, 2)
    logp = torch.tensor([[LN2, 0.0]], requires_grad=True)
    # sequence ratio exp(mean(ln2, 0)) = sqrt(2) = 1.414, clipped to 1.2 for A = 1
    out = gspo_loss(logp, old, torch.ones(1, 2), mask, eps_clip=0.2)
    assert out.loss.flatten().tolist() == pytest.approx([-1.2, -1.2])
    assert out.ppo_kl.flatten().tolist() == pytest.approx([-LN2 / 2] * 2)
    wide = gspo_loss(logp, old, torch.ones(1, 2), mask, eps_clip=10.0)
    assert wide.loss.flatten().tolist() == pytest.approx([-math.sqrt(2)] * 2)
    wide.loss.sum().backward()
    assert logp.grad.flatten().tolist() == pytest.approx([-math.sqrt(2)] * 2)  # d/dlogp_t of -exp(s_t) A


def test_tis_weights_and_metrics():
    out = truncated_importance_weights(
        torch.log(torch.tensor([0.5, 0.2])), torch.log(torch.tensor([0.1, 0.2])), clip=2.0
    )
    assert out.raw_ratio.tolist() == pytest.approx([5.0, 1.0])
    assert out.weights.tolist() == pytest.approx([2.0, 1.0])
    assert out.clipfrac.tolist() == [1.0, 0.0]
    assert out.mismatch_kl[1].item() == pytest.approx(0.0)
    assert out.mismatch_kl[0].item() == pytest.approx(4 - math.log(5))  # expm1(ln5) - ln5


def test_gae_by_hand():
    rewards = torch.tensor([[0.0, 0.0, 1.0]])
    values = torch.tensor([[0.5, 0.6, 0.7]])
    mask = torch.ones(1, 3)
    adv, ret = gae_advantages(rewards, values, mask, gamma=1.0, lambd=1.0)
    assert adv.flatten().tolist() == pytest.approx([0.5, 0.4, 0.3])  # deltas 0.1, 0.1, 0.3 summed backwards
    assert ret.flatten().tolist() == pytest.approx([1.0, 1.0, 1.0])
    adv, _ = gae_advantages(rewards, values, mask, gamma=0.9, lambd=0.5)
    # deltas: 0.9*0.6-0.5=0.04, 0.9*0.7-0.6=0.03, 1-0.7=0.3; A1 = 0.03+0.45*0.3, A0 = 0.04+0.45*A1
    assert adv.flatten().tolist() == pytest.approx([0.11425, 0.165, 0.3])


def test_token_rewards_and_reinforce_plus_plus():
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    kl = torch.full((2, 3), 1.0)
    shaped = token_rewards(torch.tensor([1.0, 2.0]), mask, kl, 0.1)
    assert shaped.flatten().tolist() == pytest.approx([-0.1, 0.9, 0.0, -0.1, -0.1, 1.9])
    adv = reinforce_plus_plus_advantages(torch.tensor([1.0, 0.0]), torch.ones(2, 2), None, 0.0)
    # returns [[1,1],[0,0]]: mean 0.5, std 0.5 -> [[1,1],[-1,-1]]
    assert adv.flatten().tolist() == pytest.approx([1.0, 1.0, -1.0, -1.0], abs=1e-6)
    base = reinforce_plus_plus_advantages(torch.tensor([3.0, 1.0]), torch.ones(2, 1), None, 0.0, group_size=2)
    assert base.flatten().tolist() == pytest.approx([1.0, -1.0], abs=1e-6)


def test_value_loss_clip_and_entropy():
    loss, clipfrac = value_loss(torch.tensor([1.0]), torch.tensor([0.5]), torch.tensor([2.0]), 0.2)
    assert loss.item() == pytest.approx(0.5 * 1.69)  # clipped V=0.7: (0.7-2)^2 beats (1-2)^2
    assert clipfrac.item() == 1.0
    assert value_loss(torch.tensor([1.0]), torch.tensor([0.5]), torch.tensor([2.0]), None)[0].item() == 0.5
    assert entropy_from_logits(torch.zeros(4)).item() == pytest.approx(math.log(4))
