"""slime helpers that vime spells differently, under slime's names (module rules point here)."""

from __future__ import annotations

from typing import Any


def get_rollout_num_engines(args: Any) -> int:
    """How many engines serve behind the router (slime's ``http_utils.get_rollout_num_engines``).

    The RolloutManager records the engines it started (``args.rollout_num_engines_total``); before
    that, the count follows from the GPU flags as in slime (at least one: a CPU engine has none).
    """
    started = getattr(args, "rollout_num_engines_total", None)
    if started:
        return int(started)
    gpus = getattr(args, "rollout_num_gpus", None) or 0
    per_engine = getattr(args, "rollout_num_gpus_per_engine", None) or 1
    return max(1, gpus // per_engine)
