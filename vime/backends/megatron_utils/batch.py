"""The padded batch the Megatron actor trains on, split into micro-batches.

All per-token tensors are ``[batch, tokens]`` and aligned to ``input_ids``: position t holds the value
for token t (its log-prob is predicted from the positions before it); ``loss_mask`` is 1 on response
tokens. Sequences are right-padded, so causal attention needs no mask.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import torch


@dataclass
class PaddedBatch:
    input_ids: torch.Tensor
    loss_mask: torch.Tensor
    advantages: torch.Tensor | None = None
    old_log_probs: torch.Tensor | None = None
    ref_log_probs: torch.Tensor | None = None
    rollout_log_probs: torch.Tensor | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            t = getattr(self, f.name)
            if t is not None and t.shape != self.input_ids.shape:
                raise ValueError(
                    f"PaddedBatch.{f.name} has shape {tuple(t.shape)}, expected {tuple(self.input_ids.shape)}"
                )

    def to(self, device: torch.device | str) -> PaddedBatch:
        return replace(self, **{f.name: _to(getattr(self, f.name), device) for f in fields(self)})

    def micro_batches(self, size: int) -> list[PaddedBatch]:
        n = self.input_ids.shape[0]
        return [
            replace(self, **{f.name: _slice(getattr(self, f.name), i, i + size) for f in fields(self)})
            for i in range(0, n, size)
        ]


def _to(t: torch.Tensor | None, device) -> torch.Tensor | None:
    return None if t is None else t.to(device, non_blocking=True)


def _slice(t: torch.Tensor | None, a: int, b: int) -> torch.Tensor | None:
    return None if t is None else t[a:b]
