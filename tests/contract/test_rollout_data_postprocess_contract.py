"""Contract: rollout-data post-process (``--rollout-data-postprocess-path``).

A plugin author provides::

    def postprocess(args, rollout_id: int, rollout_data: dict[str, list]) -> None

called on the trainer once the batch has its log probabilities. It edits ``rollout_data`` in
place (typically the loss masks) and returns None; every per-sample list keeps one entry per
sample and every loss mask stays ``response_length`` long. With no path, vime's default
(``check_rollout_data``: changes nothing, refuses a misaligned batch) is tested.

    python tools/run_contract.py tests/contract/test_rollout_data_postprocess_contract.py \\
        --rollout-data-postprocess-path my_pkg.data.mask_tools
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

from vime.rollout.train_data import REQUIRED_KEYS, convert_samples_to_train_data

FLAG = "rollout-data-postprocess-path"
DEFAULT = "vime.rollout.train_data.check_rollout_data"
CALL = "fn(args, rollout_id, rollout_data) -> None"


def _rollout_data():
    samples = [s for g in make_groups(2, 2) for s in g]
    data = convert_samples_to_train_data(make_args(), samples)
    data["log_probs"] = [[-0.4] * s.response_length for s in samples]
    return data


def test_postprocess_edits_in_place_and_keeps_alignment():
    path, fn = load_hook(FLAG, DEFAULT)
    data = _rollout_data()
    check_callable_as(fn, path, "rollout-data post-process", CALL, make_args(), 3, data)
    returned = call_hook(fn, f"rollout-data post-process {path}", make_args(), 3, data)
    if returned is not None:
        raise ContractViolation(
            f"rollout-data post-process {path} returned {type(returned).__name__}; edit in place, return None"
        )
    for key in REQUIRED_KEYS:
        if key not in data or len(data[key]) != 4:
            raise ContractViolation(
                f"rollout-data post-process {path} left {key!r} missing or not one entry per sample"
            )
    for i, (mask, length) in enumerate(zip(data["loss_masks"], data["response_lengths"], strict=True)):
        if len(mask) != length:
            raise ContractViolation(
                f"rollout-data post-process {path}: loss_masks[{i}] has {len(mask)} entries, response_length {length}"
            )


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's default")
def test_default_changes_nothing_and_refuses_misaligned_data():
    _, fn = load_hook(FLAG, DEFAULT)
    data = _rollout_data()
    before = copy.deepcopy(data)
    fn(make_args(), 0, data)
    assert data == before
    data["rewards"] = data["rewards"][:-1]
    with pytest.raises(ValueError, match="'rewards' has 3 entries"):
        fn(make_args(), 0, data)


if __name__ == "__main__":
    from contract_support import run_this_file

    run_this_file(__file__)
