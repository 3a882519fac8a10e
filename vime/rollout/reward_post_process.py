"""vime's default reward post-process: group normalization for the group-baseline estimators.

Hook contract (``--custom-reward-post-process-path``)::

    def post_process_rewards(args, samples: list[Sample]) -> tuple[list[float], list[float]]

returns ``(raw_rewards, rewards)``, one entry per sample in order: the raw scalar reward (for
logging) and the reward training uses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from vime.utils.args.defaults import flag_value
from vime.utils.types import Sample

# estimators whose advantage is "reward minus the group mean"; the first three also divide by std
GROUP_BASELINE_ESTIMATORS = ("grpo", "gspo", "cispo", "reinforce_plus_plus_baseline")
STD_NORMALIZED_ESTIMATORS = ("grpo", "gspo", "cispo")
STD_EPSILON = 1e-6


def post_process_rewards(args: Any, samples: Sequence[Sample]) -> tuple[list[float], list[float]]:
    """Raw scalar rewards, and the same rewards centred (and scaled) within each prompt's group."""
    raw = [float(sample.get_reward_value(args)) for sample in samples]
    estimator = flag_value(args, "advantage_estimator")
    if estimator not in GROUP_BASELINE_ESTIMATORS or not flag_value(args, "rewards_normalization"):
        return raw, list(raw)
    divide_by_std = estimator in STD_NORMALIZED_ESTIMATORS and flag_value(args, "grpo_std_normalization")
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
    size = getattr(args, "n_samples_per_prompt", None)  # None: not known (groups from group_index)
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
