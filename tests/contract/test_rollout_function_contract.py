"""Contract: rollout functions (``--rollout-function-path``).

A plugin author provides::

    def generate_rollout(args, rollout_id: int, data_source, evaluation: bool = False)
        -> RolloutFnTrainOutput | RolloutFnEvalOutput

- training (``evaluation=False``): ``RolloutFnTrainOutput(samples=groups, metrics=dict | None)``
  with ``args.rollout_batch_size`` groups of exactly ``args.n_samples_per_prompt`` samples, taken
  from ``data_source.get_samples``; every sample generated (status COMPLETED / TRUNCATED / ABORTED /
  FAILED, never PENDING), scored (a finite reward; 0 is a reward), ``tokens`` a list of ints with
  the response as its last ``response_length``, ``loss_mask`` / ``rollout_log_probs`` (when set)
  ``response_length`` long;
- evaluation (``evaluation=True``): ``RolloutFnEvalOutput(data={name: {"rewards", "truncated",
  "samples"}})``, three lists of equal length, ``truncated`` agreeing with the sample statuses.

No engine runs here: the contract sets ``args.custom_generate_function_path`` to an engine-free
generate hook, which a rollout function built on vime's generate path honours. With no path,
vime's default ``vime.rollout.vllm_rollout.generate_rollout`` is tested.

    python tools/run_contract.py tests/contract/test_rollout_function_contract.py --rollout-function-path my_pkg.rollout.generate
"""

from __future__ import annotations

import inspect

import pytest
from contract_support import (
    FIXTURES,
    ContractViolation,
    call_hook,
    check_callable_as,
    check_eval_output,
    check_train_output,
    contract_reward_key,
    describe_signature,
    is_overridden,
    load_hook,
)
from rollout_support import default_data_source, rollout_args

from vime.utils.types import call_rollout_fn

FLAG = "rollout-function-path"
DEFAULT = "vime.rollout.vllm_rollout.generate_rollout"
CALL = "fn(args, rollout_id, data_source, evaluation=False)"


def check_rollout_signature(fn, path):
    check_callable_as(fn, path, "rollout function", CALL, None, 0, None, evaluation=False)
    evaluation = inspect.signature(fn).parameters.get("evaluation")
    if evaluation is not None and evaluation.default is not False:
        raise ContractViolation(
            f"rollout function {path} has signature {describe_signature(fn)}; 'evaluation' must default to False"
        )


def test_signature():
    path, fn = load_hook(FLAG, DEFAULT)
    check_rollout_signature(fn, path)


def test_training_output_is_groups_of_scored_samples(tmp_path):
    path, fn = load_hook(FLAG, DEFAULT)
    args = rollout_args(tmp_path)
    output = call_hook(
        lambda: call_rollout_fn(fn, args, 0, default_data_source(args), evaluation=False),
        f"rollout function {path}",
    )
    check_train_output(
        output, path, n_samples_per_prompt=args.n_samples_per_prompt, n_groups=args.rollout_batch_size,
        reward_key=contract_reward_key(),
    )  # fmt: skip


def test_evaluation_output_has_rewards_truncation_and_samples(tmp_path):
    """What vime calls to evaluate: --eval-function-path when given (a training-only rollout
    function, such as a fully-async one, pairs with it), else the rollout function."""
    path, fn = (
        load_hook("eval-function-path", DEFAULT)
        if is_overridden("eval-function-path")
        else load_hook(FLAG, DEFAULT)
    )
    args = rollout_args(tmp_path)
    output = call_hook(
        lambda: call_rollout_fn(fn, args, 0, default_data_source(args), evaluation=True),
        f"rollout function {path}",
    )
    check_eval_output(output, path, reward_key=contract_reward_key())


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's default rollout function")
def test_default_scores_with_the_reward_hub_and_keeps_groups_together(tmp_path):
    """Even samples answer right, odd ones wrong (engine-free hook): rewards 1, 0 in every group."""
    _, fn = load_hook(FLAG, DEFAULT)
    args = rollout_args(tmp_path, rollout_batch_size=3, n_samples_per_prompt=2, over_sampling_batch_size=3)
    output = fn(args, 0, default_data_source(args), evaluation=False)
    assert [[s.reward for s in g] for g in output.samples] == [[1, 0]] * 3
    assert all(len({s.group_index for s in g}) == 1 for g in output.samples)
    assert all(
        s.metadata["generated_by"] == "engine_free" and s.rollout_log_probs for g in output.samples for s in g
    )


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's default rollout function")
def test_default_dynamic_filter_drops_zero_std_groups_and_still_fills_the_batch(tmp_path):
    _, fn = load_hook(FLAG, DEFAULT)
    args = rollout_args(
        tmp_path,
        custom_generate_function_path=f"{FIXTURES}.engine_free.generate_some_groups_all_right",
        dynamic_sampling_filter_path="vime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std",
    )
    output = fn(args, 0, default_data_source(args), evaluation=False)
    assert len(output.samples) == args.rollout_batch_size
    assert all(len({s.reward for s in g}) == 2 for g in output.samples), "a zero-std group was kept"
    assert [g[0].group_index for g in output.samples] == [0, 2]


if __name__ == "__main__":
    from contract_support import run_this_file

    run_this_file(__file__)
