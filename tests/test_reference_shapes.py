"""The published model shapes the benchmarks use (one definition, in megatron_utils/hf_config.py):
their parameter counts match the released checkpoints, and they survive the trip through an HF config."""

from __future__ import annotations

import pytest
from transformers import Qwen2Config

from vime.backends.megatron_utils.hf_config import (
    QWEN2_0_5B,
    QWEN2_1_5B,
    hf_config_dict,
    shape_from_hf_config,
)


@pytest.mark.parametrize(("shape", "params"), [(QWEN2_0_5B, 494_032_768), (QWEN2_1_5B, 1_543_714_304)])
def test_parameter_count_matches_the_released_model(shape, params):
    assert shape.num_params() == params


@pytest.mark.parametrize("shape", [QWEN2_0_5B, QWEN2_1_5B])
def test_round_trip_through_a_transformers_config(shape):
    fields = {k: v for k, v in hf_config_dict(shape).items() if k != "model_type"}
    assert shape_from_hf_config(Qwen2Config(**fields)) == shape
    assert shape_from_hf_config(hf_config_dict(shape)) == shape
