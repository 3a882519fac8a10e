"""Validate what goes into and comes out of a reward function, with one-line errors.

A reward hub error surfaces deep inside an async rollout; the message has to say which sample,
what was wrong and how to fix it, on one line, or nobody can act on it.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from vime.rollout.rm_hub.reward_config import RewardConfig


class RewardInputError(ValueError):
    """A sample or a reward that a reward function cannot use; the message is one line."""


def _where(sample: Any) -> str:
    return f"sample {getattr(sample, 'index', None)}"


def reference_answer(sample: Any, rm_type: str) -> Any:
    """The ground truth a rule-based reward compares with: a str label, or a dict's ``ground_truth``."""
    label = getattr(sample, "label", None)
    if label is None:
        raise RewardInputError(
            f"{_where(sample)} has no label for rm_type {rm_type!r}: "
            f"set --label-key to the dataset column that holds the answer"
        )
    if isinstance(label, dict):
        if "ground_truth" not in label:
            raise RewardInputError(
                f"{_where(sample)} has a dict label without 'ground_truth' (keys: {sorted(label)}): "
                f"put the answer under 'ground_truth' or score it with --custom-rm-path"
            )
        return label["ground_truth"]
    return label


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, complex)


def check_reward(reward: Any, sample: Any, args: Any, source: str) -> Any:
    """Return ``reward`` if training can use it, else raise a one-line :class:`RewardInputError`.

    Usable: a finite real number, or a dict whose ``--reward-key`` / ``--eval-reward-key``
    entry is one.
    """
    if _is_number(reward):
        if not math.isfinite(float(reward)):
            raise RewardInputError(
                f"{source} returned {reward} for {_where(sample)}: a reward must be finite"
            )
        return reward
    if isinstance(reward, dict):
        cfg = RewardConfig.from_args(args)
        keys = [k for k in (cfg.reward_key, cfg.eval_reward_key) if k]
        if not keys:
            raise RewardInputError(
                f"{source} returned a dict reward with keys {sorted(reward)} for {_where(sample)}: "
                f"pass --reward-key to pick the scalar (e.g. --reward-key {next(iter(reward), 'score')})"
            )
        for key in keys:
            if key not in reward or not _is_number(reward[key]):
                raise RewardInputError(
                    f"{source} returned a dict reward for {_where(sample)} whose {key!r} entry is "
                    f"{reward.get(key)!r}: it must hold a number (keys: {sorted(reward)})"
                )
        return reward
    raise RewardInputError(
        f"{source} returned {type(reward).__name__} {reward!r:.60} for {_where(sample)}: "
        f"a reward must be a float (or a dict with the --reward-key entry); return float(score)"
    )


def check_batch(rewards: Any, samples: list, args: Any, source: str) -> list:
    """Check a batched reward function's result: one usable reward per sample, in order."""
    if not isinstance(rewards, list | tuple):
        raise RewardInputError(
            f"{source} returned {type(rewards).__name__} for a batch of {len(samples)} samples: "
            f"a batched reward function must return a list with one reward per sample"
        )
    if len(rewards) != len(samples):
        raise RewardInputError(
            f"{source} returned {len(rewards)} rewards for a batch of {len(samples)} samples "
            f"(first index {getattr(samples[0], 'index', None) if samples else None}): return one per sample"
        )
    return [check_reward(r, s, args, source) for r, s in zip(rewards, samples, strict=True)]
