"""Contract: dynamic-sampling filters (``--dynamic-sampling-filter-path``).

A plugin author provides::

    def my_filter(args, samples: list[Sample], **kwargs) -> DynamicFilterOutput

called once per prompt group after it is scored; ``DynamicFilterOutput(keep: bool, reason: str |
None, keep_when_insufficient: bool)`` from ``vime.rollout.filter_hub.base_types`` (a bare bool is
accepted from older filters). A rejected group should give a short ``reason`` (it becomes the
metric ``rollout/dynamic_filter/drop_<reason>``). The filter must not change the samples. With no
path, vime's ``check_reward_nonzero_std`` is tested (DAPO: drop groups whose rewards all agree).

    python tools/run_contract.py tests/contract/test_dynamic_sampling_filter_contract.py \\
        --dynamic-sampling-filter-path my_pkg.filters.my_filter
"""

from __future__ import annotations

import copy

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

FLAG = "dynamic-sampling-filter-path"
DEFAULT = "vime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std"
CALL = "fn(args, samples)"


def _verdict(fn, path, group):
    from vime.rollout.filter_hub.base_types import DynamicFilterOutput

    output = call_hook(fn, f"dynamic-sampling filter {path}", make_args(), group)
    if isinstance(output, bool):
        return DynamicFilterOutput(keep=output)
    if not isinstance(output, DynamicFilterOutput):
        raise ContractViolation(
            f"dynamic-sampling filter {path} returned {type(output).__name__}; "
            f"expected DynamicFilterOutput(keep=..., reason=...) or a bool"
        )
    if not isinstance(output.keep, bool) and type(output.keep).__name__ != "bool_":
        raise ContractViolation(f"dynamic-sampling filter {path}: keep must be a bool, got {output.keep!r}")
    if output.reason is not None and not isinstance(output.reason, str):
        raise ContractViolation(
            f"dynamic-sampling filter {path}: reason must be a str or None, got {output.reason!r}"
        )
    return output


def test_filter_judges_each_group_without_changing_it():
    """The filter returns a verdict for mixed, all-right and all-wrong groups and edits nothing."""
    path, fn = load_hook(FLAG, DEFAULT)
    groups = make_groups(3, 4, rewards=[[1, 0, 1, 0], [1, 1, 1, 1], [0, 0, 0, 0]])
    check_callable_as(fn, path, "dynamic-sampling filter", CALL, make_args(), groups[0])
    before = copy.deepcopy(groups)
    for group in groups:
        _verdict(fn, path, group)
    if [[s.to_dict() for s in g] for g in before] != [[s.to_dict() for s in g] for g in groups]:
        raise ContractViolation(
            f"dynamic-sampling filter {path} changed the samples; it must only judge them"
        )


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's default filter")
def test_default_drops_zero_std_groups_with_a_reason():
    """Mixed rewards are kept; a group whose rewards all agree (0 included) is dropped, with a reason."""
    _, fn = load_hook(FLAG, DEFAULT)
    mixed, right, wrong = make_groups(3, 4, rewards=[[1, 0, 1, 0], [1, 1, 1, 1], [0, 0, 0, 0]])
    assert _verdict(fn, DEFAULT, mixed).keep
    for group in (right, wrong):
        verdict = _verdict(fn, DEFAULT, group)
        assert not verdict.keep and verdict.reason, f"zero-std group kept or without reason: {verdict}"


if __name__ == "__main__":
    from contract_support import run_this_file

    run_this_file(__file__)
