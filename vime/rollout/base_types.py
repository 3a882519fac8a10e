"""Where slime keeps the rollout-function output types (``slime/rollout/base_types.py``).

They live in ``vime.utils.types``; this module re-exports them so that code translated from
slime imports them from the same place.
"""

from vime.utils.types import RolloutFnEvalOutput, RolloutFnTrainOutput, call_rollout_fn

__all__ = ["RolloutFnEvalOutput", "RolloutFnTrainOutput", "call_rollout_fn"]
