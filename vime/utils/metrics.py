"""Metrics: reduce per-rank values, then log one record per step to JSONL, W&B, TensorBoard and the console.

Backends return, per rank, metrics that are that rank's share of a global mean (see
vime.algorithms.aggregation); :func:`reduce_rank_metrics` sums such shares, or averages
plain per-rank values. The driver logs the reduced record exactly once.
"""

from __future__ import annotations

import json
import time
from argparse import Namespace
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from vime.utils.tensorboard_log import TensorboardConfig, TensorboardLog
from vime.utils.wandb_utils import init_wandb


def reduce_rank_metrics(per_rank: Sequence[dict[str, float] | None], how: str = "first") -> dict[str, float]:
    """Reduce metric dicts from every rank into one: ``first`` (already all-reduced), ``sum`` or ``mean``."""
    records = [r for r in per_rank if r]
    if not records:
        return {}
    if how == "first":
        return dict(records[0])
    keys = sorted(set().union(*records))
    out = {}
    for key in keys:
        values = [r[key] for r in records if key in r]
        out[key] = sum(values) if how == "sum" else sum(values) / len(values)
    return out


class MetricsLogger:
    """One per run, in the driver: a JSONL file, an optional W&B run, a one-line console summary."""

    SUMMARY_KEYS = ("rollout/raw_reward", "train/pg_loss", "train/ppo_kl", "time/step")

    def __init__(self, args: Namespace, console: Console | None = None) -> None:
        path = args.metrics_jsonl or (str(Path(args.run_dir) / "metrics.jsonl") if args.run_dir else None)
        self.path = Path(path) if path else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.run = init_wandb(args)
        tensorboard = TensorboardConfig.from_args(args)
        self.tensorboard = TensorboardLog(tensorboard) if tensorboard.enabled else None
        self.console = console or Console(stderr=True)
        self.records: list[dict[str, Any]] = []

    def log(self, step: int, metrics: dict[str, Any]) -> dict[str, Any]:
        record = {"step": step, "time": time.time(), **metrics}
        self.records.append(record)
        if self.path is not None:
            with self.path.open("a") as f:
                f.write(json.dumps(record, default=float) + "\n")
        if self.run is not None:
            self.run.log(metrics, step=step)
        if self.tensorboard is not None:
            self.tensorboard.log(step, metrics)
        shown = "  ".join(f"{k.split('/')[-1]}={metrics[k]:.4g}" for k in self.SUMMARY_KEYS if k in metrics)
        self.console.log(f"step {step}: {shown}")
        return record

    def finish(self) -> None:
        if self.tensorboard is not None:
            self.tensorboard.close()
            self.tensorboard = None
        if self.run is not None:
            self.run.finish()
            self.run = None
