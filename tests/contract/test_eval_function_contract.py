"""Contract: eval functions (``--eval-function-path``; by default the rollout function itself).

A plugin author provides::

    def eval_rollout(args, rollout_id: int, data_source, evaluation: bool = False) -> RolloutFnEvalOutput

called with ``evaluation=True`` for every dataset of ``--eval-prompt-data name path ...``. It
returns ``RolloutFnEvalOutput(data={name: {"rewards": [...], "truncated": [...], "samples":
[...]}}, metrics=dict | None)``: one entry per generated sample in each list, rewards finite
numbers (0 is a reward), ``truncated`` agreeing with each sample's TRUNCATED status, every sample
generated (not PENDING). An older function returning the bare dict is wrapped by vime and passes
too. No engine runs: ``args.custom_generate_function_path`` is an engine-free hook. With no path,
vime's default (``vime.rollout.vllm_rollout.generate_rollout`` with ``evaluation=True``) is tested.

    python tools/run_contract.py tests/contract/test_eval_function_contract.py --eval-function-path my_pkg.evals.run
"""

from __future__ import annotations

import pytest
from contract_support import (
    call_hook,
    check_callable_as,
    check_eval_output,
    contract_reward_key,
    is_overridden,
    load_hook,
)
from rollout_support import N_PROMPTS, default_data_source, rollout_args

from vime.utils.types import Sample, call_rollout_fn

FLAG = "eval-function-path"
DEFAULT = "vime.rollout.vllm_rollout.generate_rollout"
CALL = "fn(args, rollout_id, data_source, evaluation=True)"


def test_eval_output_per_dataset(tmp_path):
    path, fn = load_hook(FLAG, DEFAULT)
    check_callable_as(fn, path, "eval function", CALL, None, 0, None, evaluation=True)
    args = rollout_args(tmp_path, n_samples_per_eval_prompt=2)
    output = call_hook(
        lambda: call_rollout_fn(fn, args, 5, default_data_source(args), evaluation=True),
        f"eval function {path}",
    )
    check_eval_output(output, path, reward_key=contract_reward_key())


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's default eval path")
def test_default_evaluates_every_prompt_n_times_and_flags_truncation(tmp_path):
    _, fn = load_hook(FLAG, DEFAULT)
    args = rollout_args(tmp_path, n_samples_per_eval_prompt=2, eval_max_response_len=10)
    toy = fn(args, 5, default_data_source(args), evaluation=True).data["toy"]
    assert len(toy["samples"]) == 2 * N_PROMPTS
    assert all(s.status == Sample.Status.TRUNCATED for s in toy["samples"]) and all(toy["truncated"])
    assert toy["rewards"] == [0] * (2 * N_PROMPTS)  # cut before the boxed answer: an explicit zero


if __name__ == "__main__":
    from contract_support import run_this_file

    run_this_file(__file__)
