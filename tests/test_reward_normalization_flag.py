"""--disable-rewards-normalization: the group-baseline estimators train on the raw rewards (slime's
``_post_process_rewards`` skips the group mean and std), from the command line to the train data."""

from __future__ import annotations

import pytest

from vime.rollout.reward_post_process import post_process_rewards
from vime.rollout.train_data import convert_samples_to_train_data
from vime.utils.arguments import parse_args
from vime.utils.types import Sample

REWARDS = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0]  # two groups of four


def _samples() -> list[Sample]:
    samples = []
    for i, reward in enumerate(REWARDS):
        sample = Sample(tokens=[1, 2, 3], response_length=1, reward=reward, group_index=i // 4)
        sample.index = i
        samples.append(sample)
    return samples


def _args(model_dir, *extra: str):
    return parse_args(["--hf-checkpoint", str(model_dir), "--rollout-batch-size", "2",
                       "--n-samples-per-prompt", "4", "--num-rollout", "1", *extra])  # fmt: skip


@pytest.mark.parametrize("estimator", ["grpo", "gspo", "cispo", "reinforce_plus_plus_baseline"])
def test_flag_leaves_the_rewards_raw(tiny_model_dir, estimator):
    normalized = _args(tiny_model_dir, "--advantage-estimator", estimator)
    raw, rewards = post_process_rewards(normalized, _samples())
    assert raw == REWARDS and sum(rewards[:4]) == pytest.approx(0.0, abs=1e-6)  # centred per group
    assert rewards != REWARDS

    disabled = _args(tiny_model_dir, "--advantage-estimator", estimator, "--disable-rewards-normalization")
    assert disabled.rewards_normalization is False
    assert post_process_rewards(disabled, _samples()) == (REWARDS, REWARDS)
    assert convert_samples_to_train_data(disabled, _samples())["rewards"] == REWARDS
