"""A small training batch in slime's layout, shared by the loss-hook contracts."""

from __future__ import annotations

import torch

from vime.backends.loss_hooks import slime_batch
from vime.backends.train_data import TrainBatch

VOCAB = 32


def contract_batch() -> TrainBatch:
    """Four samples of different lengths, one with a partly masked response, with old log-probs and advantages."""
    tokens = [[1, 2, 3, 4, 5, 6], [1, 2, 7, 8], [3, 4, 5], [9, 10, 11, 12, 13, 14, 15]]
    lengths = [3, 2, 1, 4]
    batch = TrainBatch(
        tokens=tokens,
        response_lengths=lengths,
        rewards=[1.0, -1.0, 0.5, -0.5],
        loss_masks=[[1, 1, 1], [1, 1], [1], [1, 0, 1, 1]],
        rollout_log_probs=[[-1.0] * n for n in lengths],
    )
    generator = torch.Generator().manual_seed(0)
    batch.computed["old_log_probs"] = [-torch.rand(n, generator=generator) - 0.5 for n in lengths]
    batch.computed["advantages"] = [torch.full((n,), r) for n, r in zip(lengths, batch.rewards, strict=True)]
    return batch


def contract_logits(batch: TrainBatch) -> torch.Tensor:
    """Packed logits ``[1, sum(total_lengths), VOCAB]`` that require grad."""
    total = sum(len(t) for t in batch.tokens)
    generator = torch.Generator().manual_seed(1)
    return torch.randn(1, total, VOCAB, generator=generator).requires_grad_(True)


def slime_contract_batch() -> dict:
    return slime_batch(contract_batch())
