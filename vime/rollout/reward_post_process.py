"""vime's default reward post-process: group normalization for the group-baseline estimators.

Hook contract (``--custom-reward-post-process-path``)::

    def post_process_rewards(args, samples: list[Sample]) -> tuple[list[float], list[float]]

returns ``(raw_rewards, rewards)``, one entry per sample in order: the raw scalar reward (for
logging) and the reward training uses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vime.algorithms.estimators import estimator
from vime.utils.args.defaults import config_from_args
from vime.utils.types import Sample

STD_EPSILON = 1e-6


@dataclass(frozen=True)
class RewardNormalization:
    """How the rewards of one rollout are normalized within each prompt's group (estimator table)."""

    group_baseline: bool  # subtract the group mean
    divide_by_std: bool  # ... and divide by the group's std

    @classmethod
    def from_args(cls, args: Any) -> RewardNormalization:
        flags = _NormalizationFlags.from_args(args)
        row = estimator(flags.advantage_estimator)
        baseline = row.group_baseline and bool(flags.rewards_normalization)
        return cls(baseline, baseline and row.std_normalized and bool(flags.grpo_std_normalization))


@dataclass(frozen=True)
class _NormalizationFlags:
    advantage_estimator: str = "grpo"
    rewards_normalization: bool = True
    grpo_std_normalization: bool = True

    @classmethod
    def from_args(cls, args: Any) -> _NormalizationFlags:
        return config_from_args(cls, args)


def post_process_rewards(args: Any, samples: Sequence[Sample]) -> tuple[list[float], list[float]]:
    """Raw scalar rewards, and the same rewards centred (and scaled) within each prompt's group."""
    raw = [float(sample.get_reward_value(args)) for sample in samples]
    norm = RewardNormalization.from_args(args)
    if not norm.group_baseline:
        return raw, list(raw)
    divide_by_std = norm.divide_by_std
    normalized: list[float] = []
    for start, end in group_spans(args, samples):
        normalized.extend(normalize_group(raw[start:end], divide_by_std=divide_by_std))
    return raw, normalized


def group_spans(args: Any, samples: Sequence[Sample]) -> list[tuple[int, int]]:
    """Where each prompt's group starts and ends in the flat sample list.

    Runs of equal ``group_index`` when every sample has one (groups may then differ in size,
    e.g. after a filter); otherwise fixed chunks of ``n_samples_per_prompt``; one group when
    neither fits.
    """
    n = len(samples)
    if n == 0:
        return []
    if all(sample.group_index is not None for sample in samples):
        spans, start = [], 0
        for i in range(1, n + 1):
            if i == n or samples[i].group_index != samples[start].group_index:
                spans.append((start, i))
                start = i
        return spans
    # not flag_value: a namespace without the flag (a plugin's) means "size unknown: one group",
    # where the parser's default of 1 would make every sample its own group
    size = getattr(args, "n_samples_per_prompt", None)
    if size and n % size == 0:
        return [(i, i + size) for i in range(0, n, size)]
    return [(0, n)]


def normalize_group(rewards: list[float], *, divide_by_std: bool) -> list[float]:
    """Subtract the group mean; optionally divide by the (Bessel-corrected) std plus epsilon."""
    if not rewards:
        return []
    mean = sum(rewards) / len(rewards)
    centred = [r - mean for r in rewards]
    if not divide_by_std:
        return centred
    std = math.sqrt(sum(c * c for c in centred) / (len(rewards) - 1)) if len(rewards) > 1 else 0.0
    return [c / (std + STD_EPSILON) for c in centred]
