"""Contract: converting samples to train data (``--custom-convert-samples-to-train-data-path``).

A plugin author provides::

    def convert(args, samples: list[Sample]) -> dict[str, list]

returning at least ``tokens``, ``response_lengths``, ``rewards``, ``raw_reward``, ``truncated``,
``loss_masks`` and ``sample_indices``: one entry per sample, in sample order, each loss mask
``response_length`` long (0/1). A sample with ``remove_sample`` set must get an all-zero loss
mask. With no path, vime's default (``vime.rollout.train_data``) is tested.

    python tools/run_contract.py tests/contract/test_convert_samples_contract.py \\
        --custom-convert-samples-to-train-data-path my_pkg.data.convert
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

from vime.rollout.train_data import REQUIRED_KEYS
from vime.utils.types import Sample

FLAG = "custom-convert-samples-to-train-data-path"
DEFAULT = "vime.rollout.train_data.convert_samples_to_train_data"
CALL = "fn(args, samples) -> dict"


def _samples():
    samples = [s for g in make_groups(2, 2, [[1, 0], [0, 1]]) for s in g]
    samples[1].status = Sample.Status.TRUNCATED
    samples[2].remove_sample = True
    samples[3].loss_mask = [1, 0, 1]
    return samples


def test_train_data_has_one_aligned_entry_per_sample():
    path, fn = load_hook(FLAG, DEFAULT)
    samples = _samples()
    check_callable_as(fn, path, "convert-samples-to-train-data", CALL, make_args(), samples)
    data = call_hook(fn, f"convert-samples-to-train-data {path}", make_args(), samples)
    if not isinstance(data, dict):
        raise ContractViolation(
            f"convert-samples-to-train-data {path} returned {type(data).__name__}; expected a dict"
        )
    missing = [key for key in REQUIRED_KEYS if key not in data]
    if missing:
        raise ContractViolation(f"convert-samples-to-train-data {path}: train data lacks {missing}")
    for key in REQUIRED_KEYS:
        if len(data[key]) != len(samples):
            raise ContractViolation(
                f"convert-samples-to-train-data {path}: {key!r} has {len(data[key])} entries for {len(samples)} samples"
            )
    for i, (sample, mask) in enumerate(zip(samples, data["loss_masks"], strict=True)):
        if len(mask) != sample.response_length or any(m not in (0, 1) for m in mask):
            raise ContractViolation(
                f"convert-samples-to-train-data {path}: loss_masks[{i}] = {mask} is not a 0/1 list of "
                f"response_length={sample.response_length}"
            )
    if any(data["loss_masks"][2]):
        raise ContractViolation(
            f"convert-samples-to-train-data {path}: a remove_sample sample kept a non-zero loss mask"
        )
    if [int(bool(t)) for t in data["truncated"]] != [0, 1, 0, 0]:
        raise ContractViolation(
            f"convert-samples-to-train-data {path}: truncated={data['truncated']} disagrees with statuses"
        )


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's default")
def test_default_keeps_masks_log_probs_and_rollout_totals():
    _, fn = load_hook(FLAG, DEFAULT)
    data = fn(make_args(), _samples())
    assert data["loss_masks"] == [[1, 1, 1], [1, 1, 1], [0, 0, 0], [1, 0, 1]]
    assert data["rollout_log_probs"] == [[-0.5] * 3] * 4
    assert data["sample_indices"] == [0, 1, 2, 3] and data["raw_reward"] == [1.0, 0.0, 0.0, 1.0]
    assert data["rollout_mask_sums"] == [3, 3, 0, 2]  # no rollout ids: every sample is its own rollout


if __name__ == "__main__":
    from contract_support import run_this_file

    run_this_file(__file__)
