"""Contract: reward post-process (``--custom-reward-post-process-path``).

A plugin author provides::

    def post_process(args, samples: list[Sample]) -> tuple[list[float], list[float]]

returning ``(raw_rewards, rewards)``: one finite number each per sample, in sample order; the
raw ones are logged, the others train. Samples arrive flat, prompt groups contiguous
(``group_index``). It must not reorder or change the samples. With no path, vime's default is
tested: GRPO-style group normalization (mean 0 and, for grpo/gspo/cispo, unit std per group).

    python tools/run_contract.py tests/contract/test_reward_post_process_contract.py \\
        --custom-reward-post-process-path my_pkg.rewards.post_process
"""

from __future__ import annotations

import math

import pytest
from contract_support import (
    ContractViolation,
    call_hook,
    check_callable_as,
    is_overridden,
    load_hook,
    make_args,
    make_groups,
)

FLAG = "custom-reward-post-process-path"
DEFAULT = "vime.rollout.reward_post_process.post_process_rewards"
CALL = "raw, rewards = fn(args, samples)"


def _flat(rewards):
    return [s for g in make_groups(len(rewards), len(rewards[0]), rewards) for s in g]


def test_returns_raw_and_training_rewards_per_sample():
    """Two lists of finite numbers, as long as the samples; the samples stay as they were."""
    path, fn = load_hook(FLAG, DEFAULT)
    samples = _flat([[1, 0, 0, 1], [0, 0, 0, 0]])
    check_callable_as(fn, path, "reward post-process", CALL, make_args(), samples)
    before = [s.to_dict() for s in samples]
    output = call_hook(fn, f"reward post-process {path}", make_args(), samples)
    if not isinstance(output, tuple | list) or len(output) != 2:
        raise ContractViolation(
            f"reward post-process {path} must return (raw_rewards, rewards); got {type(output).__name__}"
        )
    for name, values in zip(("raw_rewards", "rewards"), output, strict=True):
        if len(values) != len(samples):
            raise ContractViolation(
                f"reward post-process {path}: {name} has {len(values)} entries for {len(samples)} samples"
            )
        bad = [
            v for v in values if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v)
        ]
        if bad:
            raise ContractViolation(
                f"reward post-process {path}: {name} holds non-finite or non-numbers {bad[:3]}"
            )
    if [s.to_dict() for s in samples] != before:
        raise ContractViolation(f"reward post-process {path} changed the samples")


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's default")
def test_default_normalizes_within_each_group():
    _, fn = load_hook(FLAG, DEFAULT)
    raw, rewards = fn(make_args(), _flat([[1, 0, 0, 1], [0, 0, 0, 0]]))
    assert raw == [1, 0, 0, 1, 0, 0, 0, 0]
    std = math.sqrt(4 * 0.25 / 3)  # Bessel-corrected std of [1, 0, 0, 1]
    expected = [0.5 / (std + 1e-6), -0.5 / (std + 1e-6)] * 1
    assert rewards[:2] == pytest.approx(expected) and rewards[4:] == [0.0] * 4
    raw, rewards = fn(make_args(advantage_estimator="ppo"), _flat([[1, 0]]))
    assert rewards == [1.0, 0.0]


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's default")
def test_default_groups_by_group_index_when_sizes_differ():
    """After a filter a group may be short: groups follow group_index, not fixed chunks."""
    _, fn = load_hook(FLAG, DEFAULT)
    samples = _flat([[1, 0, 1], [1, 1, 0]])
    del samples[4:]  # group 1 keeps one sample
    _, rewards = fn(make_args(advantage_estimator="reinforce_plus_plus_baseline"), samples)
    assert rewards == pytest.approx([1 / 3, -2 / 3, 1 / 3, 0.0])  # mean-centred only, per group


if __name__ == "__main__":
    from contract_support import run_this_file

    run_this_file(__file__)
