"""slime's context-parallel helpers, under slime's path, for plugins that import them (its
train/infer-mismatch example's ``compute_mis_weights_with_cp``).

vime refuses ``--context-parallel-size`` above 1 (context parallelism needs Transformer Engine's
attention), so every sequence is whole on its rank and these are what slime's are at a context-
parallel size of 1: the tensor itself. They check that size rather than assume it, and work in
the torch backend too, where megatron-core may not even be installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def context_parallel_size() -> int:
    """Megatron's context-parallel world size, 1 when megatron-core is absent or not initialised."""
    try:
        from megatron.core import parallel_state
    except ImportError:
        return 1
    if not parallel_state.model_parallel_is_initialized():
        return 1
    return parallel_state.get_context_parallel_world_size()


def _whole_sequences() -> None:
    size = context_parallel_size()
    if size != 1:
        raise RuntimeError(
            f"context parallel size {size}: vime keeps each sequence on one rank (it refuses "
            "--context-parallel-size above 1), so slime's context-parallel helpers have nothing to gather"
        )


def all_gather_with_cp(tensor: torch.Tensor, total_length: int, response_length: int) -> torch.Tensor:
    """This sample's per-response-token values from every context-parallel rank: here, all of them."""
    _whole_sequences()
    if tensor.shape[0] != response_length:
        raise ValueError(f"{tensor.shape[0]} values for {response_length} response tokens")
    return tensor


def slice_with_cp(tokens: torch.Tensor, pad_value: int | float | Callable[..., Any]) -> torch.Tensor:
    """This rank's slice of a sequence's tokens: the whole sequence."""
    _whole_sequences()
    return tokens


def slice_log_prob_with_cp(
    log_prob: list[float] | torch.Tensor, total_length: int, response_length: int
) -> list[float] | torch.Tensor:
    """This rank's part of a sample's response log-probs: all of them."""
    if len(log_prob) != response_length:
        raise ValueError(
            f"log_prob length mismatch: len(log_prob)={len(log_prob)}, response_length={response_length}, "
            f"total_length={total_length}"
        )
    _whole_sequences()
    return log_prob
