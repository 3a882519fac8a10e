"""Contract: buffer filters (``--buffer-filter-path``).

A plugin author provides::

    def my_buffer_filter(args, rollout_id, buffer: list[list[Sample]], num_samples: int) -> list[list[Sample]]

The data source calls it when groups given back (partial rollout) wait in its buffer. It returns
at most ``num_samples`` whole groups and removes them from ``buffer`` (the data source's own
list), so that no group is handed out twice or lost. With no path, vime's ``pop_first`` (first in,
first out) is tested.

    python tools/run_contract.py tests/contract/test_buffer_filter_contract.py --buffer-filter-path my_pkg.buf.pick
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

FLAG = "buffer-filter-path"
DEFAULT = "vime.rollout.filter_hub.buffer_filters.pop_first"
CALL = "fn(args, rollout_id, buffer, num_samples)"


@pytest.mark.parametrize("num_samples", [0, 2, 5])
def test_takes_whole_groups_out_of_the_buffer(num_samples):
    """Returned groups are whole, at most num_samples, and gone from the buffer; none lost or duplicated."""
    path, fn = load_hook(FLAG, DEFAULT)
    buffer = make_groups(3, 2)
    check_callable_as(fn, path, "buffer filter", CALL, make_args(), None, [], 0)
    all_ids = sorted(s.index for g in buffer for s in g)
    taken = call_hook(fn, f"buffer filter {path}", make_args(), None, buffer, num_samples)
    if not isinstance(taken, list) or not all(isinstance(g, list) for g in taken):
        raise ContractViolation(
            f"buffer filter {path} returned {type(taken).__name__}; expected list[list[Sample]]"
        )
    if len(taken) > num_samples:
        raise ContractViolation(
            f"buffer filter {path} returned {len(taken)} groups for num_samples={num_samples}"
        )
    if any(len(group) != 2 for group in taken):
        raise ContractViolation(
            f"buffer filter {path} split a group: return whole groups of n_samples_per_prompt"
        )
    if num_samples and not taken:
        raise ContractViolation(f"buffer filter {path} returned nothing from a buffer of 3 groups")
    after = sorted([s.index for g in taken for s in g] + [s.index for g in buffer for s in g])
    if after != all_ids:
        raise ContractViolation(
            f"buffer filter {path}: returned + remaining groups hold samples {after}, expected {all_ids} "
            f"(remove what you return from the buffer; drop nothing)"
        )


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's default buffer filter")
def test_default_is_first_in_first_out():
    _, fn = load_hook(FLAG, DEFAULT)
    buffer = make_groups(3, 2)
    taken = fn(make_args(), None, buffer, 2)
    assert [g[0].group_index for g in taken] == [0, 1] and [g[0].group_index for g in buffer] == [2]


if __name__ == "__main__":
    from contract_support import run_this_file

    run_this_file(__file__)
