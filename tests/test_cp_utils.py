"""slime's context-parallel helpers under vime's path: identities at vime's context-parallel size of 1."""

import pytest
import torch

from vime.backends.megatron_utils import cp_utils


def test_helpers_return_whole_sequences():
    values = torch.arange(5.0)
    assert cp_utils.all_gather_with_cp(values, 12, 5) is values
    assert cp_utils.slice_log_prob_with_cp(values, 12, 5) is values
    assert cp_utils.slice_log_prob_with_cp([0.1, 0.2], 9, 2) == [0.1, 0.2]
    assert cp_utils.slice_with_cp(values, 0) is values


def test_a_length_mismatch_is_named():
    with pytest.raises(ValueError, match="response_length=4"):
        cp_utils.slice_log_prob_with_cp(torch.zeros(3), 10, 4)


def test_a_context_parallel_size_above_one_is_refused(monkeypatch):
    monkeypatch.setattr(cp_utils, "context_parallel_size", lambda: 2)
    with pytest.raises(RuntimeError, match="refuses --context-parallel-size"):
        cp_utils.all_gather_with_cp(torch.zeros(3), 5, 3)
