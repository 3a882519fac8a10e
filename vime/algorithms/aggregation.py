"""Loss aggregation that gives the same gradient however the batch is split.

A global batch is cut into data-parallel shards and micro-batches. If every piece
averaged its own loss and the pieces were then averaged, the result would depend on
how many tokens each piece happened to hold. Instead every piece divides by the
*global* denominator (tokens or samples of the whole global batch) and the pieces'
gradients are summed (all-reduce SUM across ranks, accumulation across micro-batches).
"""

from __future__ import annotations

import torch

AGG_MODES = ("token_mean", "seq_mean_token_mean", "seq_mean_token_sum")


def global_denominator(loss_mask: torch.Tensor, mode: str) -> float:
    """This piece's contribution to the global denominator (sum these over all pieces)."""
    if mode == "token_mean":
        return float(loss_mask.sum())
    if mode in ("seq_mean_token_mean", "seq_mean_token_sum"):
        return float(loss_mask.shape[0])
    raise ValueError(f"unknown loss aggregation {mode!r}: choose one of {', '.join(AGG_MODES)}")


def aggregate(values: torch.Tensor, loss_mask: torch.Tensor, mode: str, denominator: float) -> torch.Tensor:
    """Sum of this piece's share of the global mean of ``values`` ([batch, tokens]).

    token_mean: sum of masked token values / all tokens in the global batch.
    seq_mean_token_mean: per sequence the token mean, summed / all sequences in the global batch.
    seq_mean_token_sum: per sequence the token sum, summed / all sequences in the global batch.
    """
    mask = loss_mask.to(values.dtype)
    if mode == "token_mean":
        total = (values * mask).sum()
    elif mode == "seq_mean_token_mean":
        total = ((values * mask).sum(-1) / mask.sum(-1).clamp_min(1.0)).sum()
    elif mode == "seq_mean_token_sum":
        total = (values * mask).sum()
    else:
        raise ValueError(f"unknown loss aggregation {mode!r}: choose one of {', '.join(AGG_MODES)}")
    return total / max(denominator, 1.0)


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over the masked entries (0 when the mask is empty)."""
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp_min(1.0)
