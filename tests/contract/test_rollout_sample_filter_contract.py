"""Contract: rollout-sample filters (``--rollout-sample-filter-path``).

A plugin author provides::

    def my_sample_filter(args, groups: list[list[Sample]]) -> None

called once the batch is complete. It marks samples to leave out of the loss by setting
``sample.remove_sample = True`` (they still count in group advantage normalization) and changes
nothing else: not the number of groups or samples, not tokens, rewards or statuses. With no
path, vime's ``remove_truncated`` is tested.

    python tools/run_contract.py tests/contract/test_rollout_sample_filter_contract.py \\
        --rollout-sample-filter-path my_pkg.filters.drop_long
"""

from __future__ import annotations

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

from vime.utils.types import Sample

FLAG = "rollout-sample-filter-path"
DEFAULT = "vime.rollout.filter_hub.rollout_sample_filters.remove_truncated"
CALL = "fn(args, groups)"


def _groups():
    groups = make_groups(2, 3)
    groups[0][1].status = Sample.Status.TRUNCATED
    groups[1][2].status = Sample.Status.ABORTED
    return groups


def test_filter_only_marks_remove_sample():
    """Returns None; the groups keep their shape and every field but remove_sample."""
    path, fn = load_hook(FLAG, DEFAULT)
    groups = _groups()
    check_callable_as(fn, path, "rollout-sample filter", CALL, make_args(), groups)
    before = [[{**s.to_dict(), "remove_sample": None} for s in g] for g in groups]
    returned = call_hook(fn, f"rollout-sample filter {path}", make_args(), groups)
    if returned is not None:
        raise ContractViolation(
            f"rollout-sample filter {path} returned {type(returned).__name__}; it must return None and "
            f"set sample.remove_sample in place"
        )
    after = [[{**s.to_dict(), "remove_sample": None} for s in g] for g in groups]
    if before != after:
        raise ContractViolation(
            f"rollout-sample filter {path} changed more than remove_sample (or the group shape)"
        )
    for group in groups:
        for sample in group:
            if not isinstance(sample.remove_sample, bool):
                raise ContractViolation(f"rollout-sample filter {path}: remove_sample must be a bool")


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's default filter")
def test_default_removes_only_truncated():
    _, fn = load_hook(FLAG, DEFAULT)
    groups = _groups()
    fn(make_args(), groups)
    assert [[s.remove_sample for s in g] for g in groups] == [[False, True, False], [False, False, False]]


if __name__ == "__main__":
    from contract_support import run_this_file

    run_this_file(__file__)
