"""Where a run's outputs are, and what it ends with: the run directory, a summary, a reward plot.

The run directory (``--run-dir``; default ``<save>/runs/<run id>``, or ``vime_runs/<run id>``
without ``--save``) holds ``metrics.jsonl`` (one record per step), ``summary.json``,
``reward.png`` and ``logs/`` (engine and router logs). The plot needs matplotlib (in the
``dev`` extra); without it the run says so and writes everything else.
"""

from __future__ import annotations

import json
import math
import os
import time
from argparse import Namespace
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vime.utils.async_summary import async_summary, async_summary_lines

REWARD = "rollout/raw_reward"
ACCURACY = "rollout/full_reward_share"  # share of samples with reward >= 1: accuracy under a 0/1 verifier
RUNNING_MEAN = 5


@dataclass(frozen=True)
class RunLayout:
    root: Path

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.jsonl"

    @property
    def summary(self) -> Path:
        return self.root / "summary.json"

    @property
    def plot(self) -> Path:
        return self.root / "reward.png"

    @property
    def logs(self) -> Path:
        return self.root / "logs"


def run_id() -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"


def prepare_run_dir(args: Namespace) -> RunLayout:
    """Create the run directory and point the metrics file and engine/router logs into it."""
    if args.run_dir is None:
        parent = Path(args.save) / "runs" if args.save else Path("vime_runs")
        args.run_dir = str((parent / run_id()).absolute())
    layout = RunLayout(Path(args.run_dir))
    layout.logs.mkdir(parents=True, exist_ok=True)
    if args.metrics_jsonl is None:
        args.metrics_jsonl = str(layout.metrics)
    if args.vllm_log_dir is None:
        args.vllm_log_dir = str(layout.logs)
    return layout


def _series(records: list[dict[str, Any]], key: str) -> list[tuple[int, float]]:
    out = []
    for record in records:
        value = record.get(key)
        if isinstance(value, int | float) and math.isfinite(value):
            out.append((int(record["step"]), float(value)))
    return out


def _running_mean(series: list[tuple[int, float]], width: int) -> list[tuple[int, float]]:
    values = [v for _, v in series]
    return [(series[i][0], sum(values[i + 1 - width : i + 1]) / width) for i in range(width - 1, len(series))]


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """First, last and best of reward and accuracy, the eval scores, steps and time."""
    summary: dict[str, Any] = {"steps": len(records)}
    if records:
        summary["first_step"], summary["last_step"] = records[0]["step"], records[-1]["step"]
    for name, key in (("reward", REWARD), ("accuracy", ACCURACY)):
        series = _series(records, key)
        if series:
            values = [v for _, v in series]
            summary[name] = {"first": values[0], "last": values[-1], "best": max(values)}
            if len(values) >= 2 * RUNNING_MEAN:  # single steps are noisy: the ends, averaged
                width = RUNNING_MEAN
                summary[name] |= {
                    "mean_first": sum(values[:width]) / width,
                    "mean_last": sum(values[-width:]) / width,
                }
    evals = sorted({k for r in records for k in r if k.startswith(("eval/", "eval_before_train/"))})
    for key in evals:
        if key.endswith("truncated_ratio"):
            continue
        series = _series(records, key)
        if series:
            summary[key] = series[-1][1]
    steps = _series(records, "time/step")
    if steps:
        summary["seconds"] = sum(v for _, v in steps)
    return summary | async_summary(records)  # --fully-async runs: lag histogram, idle shares


def write_plot(records: list[dict[str, Any]], path: Path) -> Path | None:
    """reward.png: mean reward, accuracy and eval scores over steps; None without matplotlib or data."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    reward, accuracy = _series(records, REWARD), _series(records, ACCURACY)
    if reward == accuracy:  # a 0/1 verifier: one line says both
        lines = [("mean reward = accuracy (0/1 reward)", reward)]
    else:
        lines = [("mean reward", reward), ("accuracy (reward = 1)", accuracy)]
    if len(reward) >= 2 * RUNNING_MEAN:
        lines.append((f"reward, running mean of {RUNNING_MEAN} steps", _running_mean(reward, RUNNING_MEAN)))
    for key in sorted({k for r in records for k in r if k.startswith("eval/") and "truncated" not in k}):
        lines.append((key, _series(records, key)))
    lines = [(label, series) for label, series in lines if series]
    if not lines:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    for label, series in lines:
        style = (
            {"linestyle": "--", "linewidth": 2} if "running" in label else {"marker": "o", "markersize": 3}
        )
        ax.plot([s for s, _ in series], [v for _, v in series], label=label, **style)
    ax.set_xlabel("rollout step")
    ax.set_ylabel("reward / accuracy")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp)
    plt.close(fig)
    os.replace(tmp, path)
    return path


def finish_report(records: list[dict[str, Any]], layout: RunLayout) -> tuple[dict[str, Any], Path | None]:
    """Write summary.json and reward.png; returns the summary and the plot's path (None: not drawn)."""
    summary = summarize(records)
    tmp = layout.summary.with_name(".summary.json.tmp")
    tmp.write_text(json.dumps(summary, indent=1) + "\n")
    os.replace(tmp, layout.summary)
    return summary, write_plot(records, layout.plot)


def summary_lines(summary: dict[str, Any]) -> list[str]:
    lines = [
        f"steps {summary.get('first_step', '-')}..{summary.get('last_step', '-')} ({summary['steps']} run)"
    ]
    for name in ("reward", "accuracy"):
        if name not in summary or (name == "accuracy" and summary["accuracy"] == summary.get("reward")):
            continue  # with a 0/1 verifier the reward line says both
        s = summary[name]
        line = f"{name}: {s['first']:.3f} -> {s['last']:.3f} (best {s['best']:.3f}"
        if "mean_first" in s:
            line += f"; mean of the first {RUNNING_MEAN} steps {s['mean_first']:.3f}, of the last {s['mean_last']:.3f}"
        lines.append(line + ")")
    for key, value in summary.items():
        if key.startswith(("eval/", "eval_before_train/")):
            lines.append(f"{key}: {value:.3f}")
    if "seconds" in summary:
        lines.append(f"time in steps: {summary['seconds']:.0f}s")
    return lines + async_summary_lines(summary)
