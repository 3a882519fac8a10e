"""Contract: rollout sample hook (``--rollout-sample-hook-path``, may be repeated), slime's signature.

A plugin author provides::

    def hook(args, sample, *, rollout_id=None, evaluation=False) -> Sample | None

sync or async, declaring only the keywords it needs. It runs on every generated sample before its
reward; it returns None (the sample, possibly edited in place) or a Sample, which must stay
consistent: ``tokens`` end with the ``response_length`` response tokens and a ``loss_mask`` has one
entry per response token. With no path, vime's default (keep the sample) is tested.

    python tools/run_contract.py tests/contract/test_rollout_sample_hook_contract.py \\
        --rollout-sample-hook-path my_pkg.hooks.tag
"""

from __future__ import annotations

import pytest
from contract_support import (
    ContractViolation,
    hook_path,
    is_overridden,
    make_args,
    make_generated_sample,
    run_async,
)

from vime.rollout.sample_hooks import apply_rollout_sample_hooks, set_current_rollout_id
from vime.utils.types import Sample

FLAG = "rollout-sample-hook-path"
DEFAULT = "vime.rollout.sample_hooks.keep_sample"


@pytest.mark.parametrize("evaluation", [False, True])
def test_returns_a_consistent_sample(evaluation):
    path = hook_path(FLAG, DEFAULT)
    sample = make_generated_sample(0)
    set_current_rollout_id(3)
    try:
        out = run_async(
            apply_rollout_sample_hooks(
                make_args(rollout_sample_hook_path=[path]), sample, evaluation=evaluation
            )
        )
    except TypeError as exc:
        raise ContractViolation(f"rollout sample hook {path}: {exc}") from None
    finally:
        set_current_rollout_id(None)
    if not isinstance(out, Sample):
        raise ContractViolation(f"rollout sample hook {path} must leave a Sample, got {type(out).__name__}")
    if not 0 <= out.response_length <= len(out.tokens):
        raise ContractViolation(f"rollout sample hook {path}: response_length does not fit the tokens")
    if out.loss_mask is not None and len(out.loss_mask) != out.response_length:
        raise ContractViolation(f"rollout sample hook {path}: loss_mask length differs from response_length")


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's default")
def test_default_keeps_the_sample_as_generated():
    sample = make_generated_sample(0)
    before = sample.to_dict()
    out = run_async(apply_rollout_sample_hooks(make_args(rollout_sample_hook_path=[DEFAULT]), sample))
    assert out is sample and sample.to_dict() == before
