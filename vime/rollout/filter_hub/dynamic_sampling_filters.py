"""Group filters for dynamic sampling (DAPO): drop groups that carry no learning signal.

A group whose samples all got the same reward has zero advantage under group-normalized
algorithms (GRPO), so training on it only costs time.
"""

from __future__ import annotations

import statistics
from typing import Any

from .base_types import DynamicFilterOutput

__all__ = ["check_reward_nonzero_std", "check_reward_nonzero_std_with_fallback"]

_MIN_STD = 1e-6


def _flatten(samples: list) -> list:
    """A group may hold lists of samples (a multi-turn rollout fanned out): score each one."""
    flat = []
    for item in samples:
        flat.extend(item if isinstance(item, list) else [item])
    return flat


def _rewards(args: Any, samples: list) -> list:
    rewards = []
    for sample in _flatten(samples):
        if sample.reward is None:
            raise ValueError(
                f"dynamic-sampling filter: sample {sample.index} has no reward yet; "
                f"the filter must run after rewards are computed"
            )
        rewards.append(sample.get_reward_value(args))
    return rewards


def check_reward_nonzero_std(args: Any, samples: list, **kwargs: Any) -> DynamicFilterOutput:
    """Keep the group only if its rewards are not all the same."""
    rewards = _rewards(args, samples)
    keep = len(rewards) > 1 and statistics.pstdev(float(r) for r in rewards) > _MIN_STD
    return DynamicFilterOutput(keep=keep, reason=None if keep else f"zero_std_{round(rewards[0], 1)}")


def check_reward_nonzero_std_with_fallback(args: Any, samples: list, **kwargs: Any) -> DynamicFilterOutput:
    """Like :func:`check_reward_nonzero_std`, but keep a zero-std group rather than resample."""
    output = check_reward_nonzero_std(args, samples, **kwargs)
    output.keep_when_insufficient = True
    return output
