"""The reward hub: score one sample (``async_rm``) or a batch / group (``batched_async_rm``).

Which reward runs, first match wins:

1. the sample's own ``custom_rm_path`` (set per eval dataset),
2. ``--custom-rm-path`` (``fn(args, sample, **kw)``, sync or async; with ``--group-rm``,
   :func:`batched_async_rm` calls it with the whole group: ``fn(args, samples, **kw) -> list``),
3. ``sample.metadata["rm_type"]``, then ``--rm-type``: one of :data:`RULE_BASED_REWARDS`,
   ``remote_rm``, or any of them prefixed with ``boxed_`` (score only the boxed answer).

Every reward that comes back is checked (:func:`~vime.rollout.rm_hub.checks.check_reward`),
so a plugin that returns a string or a NaN fails here with a one-line message naming the sample.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

from vime.rollout.rm_hub.reward_config import RewardConfig
from vime.utils.misc import load_function, maybe_await

from .checks import RewardInputError, check_batch, check_reward, reference_answer
from .dapo import dapo_reward
from .deepscaler import deepscaler_reward
from .f1 import f1_reward
from .gpqa import gpqa_reward
from .math_utils import extract_boxed_answer, grade_answer_verl, grade_math_answer
from .remote import RemoteRewardError, close_remote_sessions, remote_rm

__all__ = [
    "RULE_BASED_REWARDS",
    "RemoteRewardError",
    "RewardInputError",
    "async_rm",
    "batched_async_rm",
    "close_remote_sessions",
    "grade_answer_verl",
    "rule_based_reward",
]


def _math(response: str, truth: Any, metadata: dict) -> int:
    return 1 if grade_math_answer(response, truth) else 0


def _random(response: str, truth: Any, metadata: dict) -> int:
    return random.randint(0, 1)


# rm_type -> fn(response, ground_truth, metadata); "random" needs no label.
RULE_BASED_REWARDS: dict[str, Callable[[str, Any, dict], Any]] = {
    "math": _math,
    "deepscaler": lambda response, truth, metadata: deepscaler_reward(response, truth),
    "dapo": lambda response, truth, metadata: dapo_reward(response, truth),
    "f1": lambda response, truth, metadata: f1_reward(response, truth),
    "gpqa": gpqa_reward,
    "random": _random,
}
_LABEL_FREE = {"random"}
_FINDS_BOX_ITSELF = {"math", "deepscaler"}  # boxed_math == math
_REMOTE = {"remote_rm", "remote"}


def _rm_type(cfg: RewardConfig, sample: Any) -> str:
    metadata = sample.metadata if isinstance(getattr(sample, "metadata", None), dict) else {}
    return str(metadata.get("rm_type") or cfg.rm_type or "").strip()


def rule_based_reward(rm_type: str, sample: Any) -> Any:
    """Score ``sample`` with a built-in rule; raises a one-line error for an unknown rm_type."""
    response = sample.response or ""
    name = rm_type.removeprefix("boxed_")
    if name != rm_type and name not in _FINDS_BOX_ITSELF:
        response = extract_boxed_answer(response) or ""
    if name not in RULE_BASED_REWARDS:
        known = ", ".join(sorted([*RULE_BASED_REWARDS, *_REMOTE]))
        raise RewardInputError(
            f"unknown rm_type {rm_type!r} for sample {sample.index}: use one of {known} "
            f"(optionally prefixed boxed_), or pass --custom-rm-path"
        )
    truth = None if name in _LABEL_FREE else reference_answer(sample, rm_type)
    metadata = sample.metadata if isinstance(sample.metadata, dict) else {}
    return RULE_BASED_REWARDS[name](response, truth, metadata)


async def async_rm(args: Any, sample: Any, **kwargs: Any) -> Any:
    """The reward of one sample (a number, or a dict read through ``--reward-key``)."""
    cfg = RewardConfig.from_args(args)
    custom_path = getattr(sample, "custom_rm_path", None) or cfg.custom_rm_path
    if custom_path:
        reward = await maybe_await(load_function(custom_path)(args, sample, **kwargs))
        return check_reward(reward, sample, args, f"custom RM {custom_path}")
    rm_type = _rm_type(cfg, sample)
    if not rm_type:
        raise RewardInputError(
            f"no reward function for sample {sample.index}: pass --rm-type (e.g. math) or --custom-rm-path"
        )
    if rm_type in _REMOTE:
        return check_reward(await remote_rm(args, sample), sample, args, f"remote RM {cfg.rm_url}")
    return check_reward(rule_based_reward(rm_type, sample), sample, args, f"rm_type {rm_type!r}")


async def batched_async_rm(args: Any, samples: list[Any], **kwargs: Any) -> list[Any]:
    """Rewards for a list of samples, in order.

    With ``--group-rm`` and ``--custom-rm-path`` the function gets the whole list at once
    (group rewards, e.g. ranking the ``n_samples_per_prompt`` answers of one prompt). Otherwise
    each sample is scored on its own by :func:`async_rm`, concurrently, so a per-sample custom
    RM is never handed a list by mistake (slime does hand it one; vime keeps the two apart).
    """
    if not samples:
        return []
    cfg = RewardConfig.from_args(args)
    custom_path = cfg.custom_rm_path
    if custom_path and cfg.group_rm:
        rewards = await maybe_await(load_function(custom_path)(args, samples, **kwargs))
        return check_batch(rewards, samples, args, f"custom group RM {custom_path}")
    return list(await asyncio.gather(*(async_rm(args, sample, **kwargs) for sample in samples)))
