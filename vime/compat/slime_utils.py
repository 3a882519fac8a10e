"""slime helpers that vime spells differently, under slime's names (module rules point here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vime.utils.args.defaults import config_from_args


def get_rollout_num_engines(args: Any) -> int:
    """How many engines serve behind the router (slime's ``http_utils.get_rollout_num_engines``).

    The RolloutManager records the engines it started (``args.rollout_num_engines_total``); before
    that, the count follows from the GPU flags as in slime (at least one: a CPU engine has none).
    """
    # not a flag: the RolloutManager sets it on args once its engines run, so it may be absent
    started = getattr(args, "rollout_num_engines_total", None)
    if started:
        return int(started)
    gpus = config_from_args(_EngineGpus, args)
    return max(1, (gpus.rollout_num_gpus or 0) // (gpus.rollout_num_gpus_per_engine or 1))


@dataclass(frozen=True)
class _EngineGpus:
    rollout_num_gpus: int | None = None
    rollout_num_gpus_per_engine: int | None = 1
