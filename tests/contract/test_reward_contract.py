"""Contract: reward functions (``--custom-rm-path``), per sample and per group.

A plugin author provides, for ``--custom-rm-path my_pkg.rm.score``::

    async def score(args, sample: Sample, **kwargs) -> float

or, when training runs with ``--group-rm`` (pass ``--group-rm`` to run_contract too)::

    async def score(args, samples: list[Sample], **kwargs) -> list[float]   # one per sample

A plain ``def`` is accepted too: training awaits the result only when it is awaitable
(``vime.utils.misc.maybe_await``), so the contract does the same.

A reward is a finite number (0 is a reward; None is "never scored"). With ``--reward-key K``
(pass it to run_contract too) it is a dict holding a number under K. Labels may be strings or
dicts (``{"ground_truth": ...}``): a reward must handle both. It must not change the sample's
tokens or response. With no path, vime's reward hub (``vime.rollout.rm_hub``) is tested.

    python tools/run_contract.py tests/contract/test_reward_contract.py --custom-rm-path my_pkg.rm.score
"""

from __future__ import annotations

import copy
import json
import os

import pytest
from contract_support import (
    FIXTURES,
    ContractViolation,
    call_hook,
    check_callable_as,
    contract_group_rm,
    contract_reward_key,
    is_overridden,
    load_hook,
    make_args,
    make_generated_sample,
    reward_mismatch,
    run_async,
)

FLAG = "custom-rm-path"
DEFAULT_SINGLE = "vime.rollout.rm_hub.async_rm"
DEFAULT_GROUP = "vime.rollout.rm_hub.batched_async_rm"
SINGLE_CALL = "[await] fn(args, sample)"
GROUP_CALL = "[await] fn(args, samples) -> list"

plugin_is_group = is_overridden(FLAG) and contract_group_rm()
plugin_is_single = is_overridden(FLAG) and not contract_group_rm()


def scored_samples():
    """A right answer with a string label, a right one with a dict label, a wrong one, an empty one.

    ``VIME_CONTRACT_LABEL`` (JSON) gives every sample the label your dataset has instead, for a
    reward that reads one shape only (Search-R1: ``{"ground_truth": {"target": ["2"]}}``).
    """
    right = make_generated_sample(0, response="so the answer is \\boxed{2}.", reward=None)
    right_dict = make_generated_sample(1, response="\\boxed{2}", reward=None)
    right_dict.label = {"ground_truth": "2"}
    wrong = make_generated_sample(2, response="I think \\boxed{3}.", reward=None)
    empty = make_generated_sample(3, response="", reward=None)
    samples = [right, right_dict, wrong, empty]
    if os.environ.get("VIME_CONTRACT_LABEL"):
        for sample in samples:
            sample.label = json.loads(os.environ["VIME_CONTRACT_LABEL"])
    return samples  # their args carry VIME_CONTRACT_ARGS (make_args), as every hook's do


def _check_rewards(rewards, samples, path):
    key = contract_reward_key()
    for sample, reward in zip(samples, rewards, strict=True):
        problem = reward_mismatch(reward, key)
        if problem:
            raise ContractViolation(
                f"reward {path} on sample {sample.index} (label {sample.label!r}): {problem}"
            )


def _check_untouched(before, after, path):
    for old, new in zip(before, after, strict=True):
        if (old.tokens, old.response, old.response_length) != (new.tokens, new.response, new.response_length):
            raise ContractViolation(
                f"reward {path} changed sample {old.index}'s tokens or response; it must only score"
            )


@pytest.mark.skipif(plugin_is_group, reason="the plugin under test is a group reward (--group-rm)")
def test_single_reward_scores_each_sample():
    """``await fn(args, sample)`` returns a valid reward for string and dict labels alike."""
    path, fn = load_hook(FLAG, DEFAULT_SINGLE)
    check_callable_as(fn, path, "reward", SINGLE_CALL, make_args(), make_generated_sample(0))
    samples = scored_samples()
    before = copy.deepcopy(samples)
    rewards = [
        call_hook(fn, f"reward {path} on sample {s.index} (label {s.label!r})", make_args(), s)
        for s in samples
    ]
    _check_rewards(rewards, samples, path)
    _check_untouched(before, samples, path)


@pytest.mark.skipif(plugin_is_single, reason="the plugin under test is a per-sample reward")
def test_group_reward_scores_the_whole_group():
    """``await fn(args, samples)`` returns one valid reward per sample, in order."""
    path, fn = load_hook(FLAG, DEFAULT_GROUP)
    args = make_args(group_rm=True)
    check_callable_as(fn, path, "group reward", GROUP_CALL, args, [make_generated_sample(0)])
    samples = scored_samples()
    before = copy.deepcopy(samples)
    rewards = call_hook(fn, f"group reward {path}", args, samples)
    if not isinstance(rewards, list | tuple):
        raise ContractViolation(
            f"group reward {path} returned {type(rewards).__name__}; expected a list, one per sample"
        )
    if len(rewards) != len(samples):
        raise ContractViolation(
            f"group reward {path} returned {len(rewards)} rewards for {len(samples)} samples"
        )
    _check_rewards(rewards, samples, path)
    _check_untouched(before, samples, path)


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's default reward hub")
def test_default_math_reward_is_explicit_zero_or_one():
    """vime's math reward: 1 for the right boxed answer (string or dict label), 0 (not None) otherwise."""
    _, fn = load_hook(FLAG, DEFAULT_SINGLE)
    rewards = [run_async(fn(make_args(rm_type="math"), sample)) for sample in scored_samples()]
    assert rewards == [1, 1, 0, 0], f"math reward on right/right(dict label)/wrong/empty gave {rewards}"


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's default reward hub")
def test_default_dispatch_precedence():
    """sample.custom_rm_path beats --custom-rm-path, which beats --rm-type (and --group-rm batches)."""
    _, single = load_hook(FLAG, DEFAULT_SINGLE)
    _, batched = load_hook(FLAG, DEFAULT_GROUP)
    constant_half = f"{FIXTURES}.reference_plugins.constant_half_reward"
    constant_quarter = f"{FIXTURES}.reference_plugins.constant_quarter_reward"
    sample = make_generated_sample(0, response="\\boxed{2}", reward=None)
    assert run_async(single(make_args(custom_rm_path=constant_half), sample)) == 0.5
    sample.custom_rm_path = constant_quarter
    assert run_async(single(make_args(custom_rm_path=constant_half), sample)) == 0.25
    group_path = f"{FIXTURES}.reference_plugins.group_rank_reward"
    samples = scored_samples()
    assert run_async(batched(make_args(custom_rm_path=group_path, group_rm=True), samples)) == [
        0.0,
        1.0,
        2.0,
        3.0,
    ]


if __name__ == "__main__":
    from contract_support import run_this_file

    run_this_file(__file__)
