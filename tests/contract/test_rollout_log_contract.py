"""Contract: rollout log functions (``--custom-rollout-log-function-path`` and
``--custom-eval-rollout-log-function-path``).

A plugin author provides::

    def log_rollout(rollout_id, args, samples: list[Sample], rollout_extra_metrics: dict | None,
                    rollout_time: float) -> bool
    def log_eval(rollout_id, args, data: dict[str, dict], extra_metrics: dict | None) -> bool

``data`` is ``RolloutFnEvalOutput.data``. Return True to skip vime's default logging, False to
keep it. Neither may change the samples (they are trained on afterwards). With no paths, vime's
defaults (``vime.rollout.rollout_metrics``) are tested.

    python tools/run_contract.py tests/contract/test_rollout_log_contract.py \\
        --custom-rollout-log-function-path my_pkg.logs.log_rollout
"""

from __future__ import annotations

import pytest
from contract_support import (
    FIXTURES,
    ContractViolation,
    call_hook,
    check_callable_as,
    is_overridden,
    load_hook,
    make_args,
    make_groups,
)

from vime.rollout import rollout_metrics
from vime.utils.types import Sample

TRAIN_FLAG = "custom-rollout-log-function-path"
EVAL_FLAG = "custom-eval-rollout-log-function-path"
TRAIN_DEFAULT = "vime.rollout.rollout_metrics.log_rollout_data"
EVAL_DEFAULT = "vime.rollout.rollout_metrics.log_eval_rollout_data"


def _samples():
    samples = [s for g in make_groups(2, 2, [[1, 0], [1, 1]]) for s in g]
    samples[3].status = Sample.Status.TRUNCATED
    return samples


def _check_bool(value, what):
    if not isinstance(value, bool):
        raise ContractViolation(
            f"{what} returned {type(value).__name__}; return True (skip vime's logging) or False"
        )


def test_rollout_log_function():
    path, fn = load_hook(TRAIN_FLAG, TRAIN_DEFAULT)
    call = "fn(rollout_id, args, samples, rollout_extra_metrics, rollout_time) -> bool"
    samples = _samples()
    check_callable_as(fn, path, "rollout log function", call, 0, make_args(), samples, None, 1.5)
    before = [s.to_dict() for s in samples]
    _check_bool(
        call_hook(fn, f"rollout log function {path}", 7, make_args(), samples, {"x": 1.0}, 1.5),
        f"rollout log function {path}",
    )
    if [s.to_dict() for s in samples] != before:
        raise ContractViolation(f"rollout log function {path} changed the samples")


def test_eval_log_function():
    path, fn = load_hook(EVAL_FLAG, EVAL_DEFAULT)
    call = "fn(rollout_id, args, data, extra_metrics) -> bool"
    samples = _samples()
    data = {
        "toy": {
            "rewards": [s.reward for s in samples],
            "truncated": [False, False, False, True],
            "samples": samples,
        }
    }
    check_callable_as(fn, path, "eval log function", call, 0, make_args(), data, None)
    before = [s.to_dict() for s in samples]
    _check_bool(
        call_hook(fn, f"eval log function {path}", 7, make_args(), data, None), f"eval log function {path}"
    )
    if [s.to_dict() for s in samples] != before:
        raise ContractViolation(f"eval log function {path} changed the samples")


@pytest.fixture
def captured():
    sent = []
    rollout_metrics.set_metrics_sink(lambda metrics, step_key: sent.append((step_key, metrics)))
    yield sent
    rollout_metrics.set_metrics_sink(None)


@pytest.mark.skipif(is_overridden(TRAIN_FLAG) or is_overridden(EVAL_FLAG), reason="checks vime's defaults")
def test_defaults_send_metrics_to_the_sink(captured):
    samples = _samples()
    assert rollout_metrics.log_rollout_data(3, make_args(), samples, {"extra": 2.0}, 2.0) is True
    step_key, metrics = captured[-1]
    assert step_key == "rollout/step" and metrics["rollout/step"] == 3 and metrics["extra"] == 2.0
    assert metrics["rollout/truncated_ratio"] == 0.25 and metrics["rollout/reward/mean"] == 0.75
    assert metrics["rollout/zero_std/count_1.0"] == 1.0  # the [1, 1] group
    assert metrics["perf/response_tokens_per_sec"] == 4 * 3 / 2.0
    data = {"toy": {"rewards": [1.0, 0.0], "truncated": [True, False], "samples": samples[:2]}}
    assert rollout_metrics.log_eval_rollout_data(3, make_args(), data, None) is True
    _, metrics = captured[-1]
    assert metrics["eval/toy"] == 0.5 and metrics["eval/toy-truncated_ratio"] == 0.5


@pytest.mark.skipif(is_overridden(TRAIN_FLAG) or is_overridden(EVAL_FLAG), reason="checks vime's defaults")
def test_defaults_run_a_custom_hook_first_and_may_name_themselves(captured):
    """A custom hook returning True replaces the default; naming the default itself does not recurse."""
    samples = _samples()
    skip = make_args(custom_rollout_log_function_path=f"{FIXTURES}.reference_plugins.log_and_skip_default")
    assert rollout_metrics.log_rollout_data(1, skip, samples, None, 1.0) is True and captured == []
    itself = make_args(
        custom_rollout_log_function_path=TRAIN_DEFAULT, custom_eval_rollout_log_function_path=EVAL_DEFAULT
    )
    assert rollout_metrics.log_rollout_data(1, itself, samples, None, 1.0) is True
    data = {"toy": {"rewards": [1.0], "truncated": [False], "samples": samples[:1]}}
    assert rollout_metrics.log_eval_rollout_data(1, itself, data, None) is True
    assert [step for step, _ in captured] == ["rollout/step", "eval/step"]


if __name__ == "__main__":
    from contract_support import run_this_file

    run_this_file(__file__)
