"""The learning-rate schedule both backends follow: linear warm-up, then constant, linear or cosine
decay to ``--min-lr`` over the run's optimizer steps (Megatron's styles and flag names)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LrSchedule:
    lr: float
    min_lr: float = 0.0
    warmup_iters: int = 0
    decay_style: str = "constant"
    total_steps: int = 0

    @classmethod
    def from_args(cls, args: Any, total_steps: int, lr: float | None = None) -> LrSchedule:
        """``--lr-warmup-fraction`` turns into iterations of this run's ``total_steps``."""
        warmup = args.lr_warmup_iters
        if args.lr_warmup_fraction is not None:
            warmup = round(args.lr_warmup_fraction * total_steps)
        return cls(
            lr=args.lr if lr is None else lr,
            min_lr=args.min_lr,
            warmup_iters=warmup,
            decay_style=args.lr_decay_style,
            total_steps=total_steps,
        )

    def factor(self, step: int) -> float:
        """The multiplier of ``lr`` for optimizer step ``step`` (0-based)."""
        floor = self.min_lr / self.lr if self.lr else 0.0
        if self.warmup_iters and step < self.warmup_iters:
            return (step + 1) / self.warmup_iters
        if self.decay_style == "constant" or self.total_steps <= self.warmup_iters:
            return 1.0
        progress = min(1.0, (step - self.warmup_iters) / max(1, self.total_steps - self.warmup_iters))
        if self.decay_style == "linear":
            return floor + (1 - floor) * (1 - progress)
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))

    def lr_at(self, step: int) -> float:
        return self.lr * self.factor(step)
