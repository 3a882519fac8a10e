"""vime's default rollout log functions: metrics from the generated samples.

Hook contracts:

- ``--custom-rollout-log-function-path``:
  ``def log_rollout(rollout_id, args, samples: list[Sample], rollout_extra_metrics: dict | None,
  rollout_time: float) -> bool``: return True to skip vime's default logging.
- ``--custom-eval-rollout-log-function-path``:
  ``def log_eval(rollout_id, args, data: dict[str, dict], extra_metrics: dict | None) -> bool``:
  ``data`` is ``RolloutFnEvalOutput.data``; return True to skip vime's default logging.

Neither may change the samples: they are trained on afterwards.
"""

from __future__ import annotations

import copy
import logging
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from vime.algorithms.estimators import estimator
from vime.utils.args.defaults import config_from_args
from vime.utils.misc import load_function
from vime.utils.types import Sample

logger = logging.getLogger(__name__)

MetricsSink = Callable[[dict[str, float], str], None]


@dataclass(frozen=True)
class RolloutLogConfig:
    """The flags the rollout and eval log functions read, once per call."""

    advantage_estimator: str = "grpo"
    custom_rollout_log_function_path: str | None = None
    custom_eval_rollout_log_function_path: str | None = None
    load_debug_rollout_data: str | None = None
    eval_reward_key: str | None = None

    @classmethod
    def from_args(cls, args: Any) -> RolloutLogConfig:
        return config_from_args(cls, args)


def _log_to_logger(metrics: dict[str, float], step_key: str) -> None:
    logger.info("%s %s", step_key, metrics)


_sink: MetricsSink = _log_to_logger


def set_metrics_sink(sink: MetricsSink | None) -> None:
    """Where the default log functions send their dict (the tracker: W&B, JSONL); None = the logger."""
    global _sink
    _sink = sink or _log_to_logger


def statistics_of(values: Sequence[float], prefix: str) -> dict[str, float]:
    if not values:
        return {}
    return {
        f"{prefix}mean": float(statistics.fmean(values)),
        f"{prefix}median": float(statistics.median(values)),
        f"{prefix}max": float(max(values)),
        f"{prefix}min": float(min(values)),
    }


def compute_metrics_from_samples(args: Any, samples: Sequence[Sample]) -> dict[str, float]:
    """Response lengths, rewards, truncation / abort ratios, zero-std groups, prefix-cache hits."""
    if not samples:
        return {}
    metrics = statistics_of([s.effective_response_length for s in samples], "response_len/")
    rewards = [s.get_reward_value(args) for s in samples]
    if all(isinstance(r, int | float) for r in rewards):
        metrics |= statistics_of([float(r) for r in rewards], "reward/")
    n = len(samples)
    metrics["truncated_ratio"] = sum(s.status == Sample.Status.TRUNCATED for s in samples) / n
    metrics["aborted_ratio"] = sum(s.status == Sample.Status.ABORTED for s in samples) / n
    metrics |= _zero_std_metrics(args, samples)
    cached = sum(s.prefix_cache_info.cached_tokens for s in samples)
    prompt = sum(s.prefix_cache_info.total_prompt_tokens for s in samples)
    metrics["prefix_cache_hit_rate"] = cached / prompt if prompt > 0 else 0.0
    return metrics


def _zero_std_metrics(args: Any, samples: Sequence[Sample]) -> dict[str, float]:
    """How many prompt groups got the same reward on every sample (no learning signal for GRPO)."""
    if estimator(RolloutLogConfig.from_args(args).advantage_estimator).needs_critic:
        return {}
    groups: dict[Any, list[Any]] = {}
    for sample in samples:
        groups.setdefault(sample.group_index, []).append(sample.get_reward_value(args))
    counts: dict[str, int] = {}
    for rewards in groups.values():
        if all(r == rewards[0] for r in rewards) and isinstance(rewards[0], int | float):
            key = f"zero_std/count_{round(float(rewards[0]), 1)}"
            counts[key] = counts.get(key, 0) + 1
    return {key: float(value) for key, value in counts.items()}


def log_rollout_data(
    rollout_id: int,
    args: Any,
    samples: Sequence[Sample],
    rollout_extra_metrics: dict[str, Any] | None,
    rollout_time: float,
) -> bool:
    """Send ``rollout/*`` and ``perf/*`` metrics to the sink; a custom hook may take over first."""
    cfg = RolloutLogConfig.from_args(args)
    custom = cfg.custom_rollout_log_function_path
    hook = load_function(custom) if custom else None
    if hook not in (None, log_rollout_data) and hook(
        rollout_id, args, samples, rollout_extra_metrics, rollout_time
    ):
        return True
    if cfg.load_debug_rollout_data:
        return True
    metrics: dict[str, float] = dict(rollout_extra_metrics or {})
    metrics |= {f"rollout/{k}": v for k, v in compute_metrics_from_samples(args, samples).items()}
    metrics["perf/rollout_time"] = float(rollout_time)
    if rollout_time > 0 and samples:
        metrics["perf/response_tokens_per_sec"] = sum(s.response_length for s in samples) / rollout_time
    metrics["rollout/step"] = float(rollout_id)
    _sink(metrics, "rollout/step")
    return True


def log_eval_rollout_data(
    rollout_id: int, args: Any, data: dict[str, dict[str, Any]], extra_metrics: dict[str, Any] | None
) -> bool:
    """Send ``eval/<dataset>`` mean reward, truncation ratio and sample metrics to the sink."""
    cfg = RolloutLogConfig.from_args(args)
    custom = cfg.custom_eval_rollout_log_function_path
    hook = load_function(custom) if custom else None
    if hook not in (None, log_eval_rollout_data) and hook(rollout_id, args, data, extra_metrics):
        return True
    metrics: dict[str, float] = dict(extra_metrics or {})
    for name, result in data.items():
        rewards = result.get("rewards") or []
        if rewards:
            metrics[f"eval/{name}"] = sum(rewards) / len(rewards)
        truncated = result.get("truncated") or []
        if truncated:
            metrics[f"eval/{name}-truncated_ratio"] = sum(bool(t) for t in truncated) / len(truncated)
        samples = result.get("samples")
        if samples:
            eval_args = _eval_view(args, cfg.eval_reward_key)
            metrics |= {
                f"eval/{name}/{k}": v for k, v in compute_metrics_from_samples(eval_args, samples).items()
            }
    metrics["eval/step"] = float(rollout_id)
    _sink(metrics, "eval/step")
    return True


def _eval_view(args: Any, eval_reward_key: str | None) -> Any:
    """Eval samples are scored with ``--eval-reward-key`` when set, else ``--reward-key``: a shallow
    copy of ``args`` (a parser's or a plugin's namespace) with that one attribute changed."""
    if eval_reward_key is None:
        return args
    view = copy.copy(args)
    view.reward_key = eval_reward_key
    return view
