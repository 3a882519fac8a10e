"""``--rollout-sample-hook-path``: hooks applied to each generated Sample before its reward (slime's).

Signature ``hook(args, sample, *, rollout_id=None, evaluation=False) -> Sample | None``, sync or
async; a hook gets only the keywords it declares (all of them with ``**kwargs``). ``None`` keeps the
(possibly edited) sample, a Sample replaces it, anything else is an error. Several hooks run in the
order given; a list of samples (a multi-sample generate hook) keeps its shape.
"""

from __future__ import annotations

import inspect
from typing import Any

from vime.rollout.rollout_config import RolloutConfig
from vime.utils.misc import load_function
from vime.utils.types import Sample

__all__ = ["apply_rollout_sample_hooks", "keep_sample", "set_current_rollout_id"]

_current_rollout_id: int | None = None


def set_current_rollout_id(rollout_id: int | None) -> None:
    """The step the rollout side is generating (the manager sets it before calling the rollout function)."""
    global _current_rollout_id
    _current_rollout_id = rollout_id


def keep_sample(
    args: Any, sample: Sample, *, rollout_id: int | None = None, evaluation: bool = False
) -> None:
    """vime's default hook: leave the sample as generated (what no ``--rollout-sample-hook-path`` means)."""
    return None


def _accepted_kwargs(function: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    parameters = inspect.signature(function).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return kwargs
    names = {p.name for p in parameters}
    return {k: v for k, v in kwargs.items() if k in names}


async def _apply_to_sample(args: Any, sample: Sample, paths: list[str], kwargs: dict[str, Any]) -> Sample:
    for path in paths:
        hook = load_function(path)
        result = hook(args, sample, **_accepted_kwargs(hook, kwargs))
        if inspect.isawaitable(result):
            result = await result
        if result is None:
            continue
        if not isinstance(result, Sample):
            raise TypeError(
                f"rollout sample hook {path!r} returned {type(result).__name__}, expected Sample or None"
            )
        sample = result
    return sample


async def apply_rollout_sample_hooks(args: Any, value: Sample | list, **kwargs: Any) -> Sample | list:
    """Run the configured hooks on every Sample in ``value`` (a Sample or nested lists of them)."""
    paths = list(RolloutConfig.from_args(args).rollout_sample_hook_path)
    if not paths:
        return value
    kwargs.setdefault("rollout_id", _current_rollout_id)
    if isinstance(value, Sample):
        return await _apply_to_sample(args, value, paths, kwargs)
    if isinstance(value, list):
        return [await apply_rollout_sample_hooks(args, item, **kwargs) for item in value]
    raise TypeError(f"rollout sample hooks take a Sample or a list of them, got {type(value).__name__}")
