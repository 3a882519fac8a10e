"""One place that decides when to evaluate and when to save, for train.py and train_async.py alike."""

from __future__ import annotations

from argparse import Namespace
from dataclasses import dataclass


def is_periodic_step(rollout_id: int, interval: int | None) -> bool:
    """True after every ``interval``-th step (step ids start at 0: steps interval-1, 2*interval-1, ...)."""
    return interval is not None and interval > 0 and (rollout_id + 1) % interval == 0


@dataclass(frozen=True)
class TrainSchedule:
    num_rollout: int
    save_interval: int | None
    eval_interval: int | None
    saving: bool
    evaluating: bool
    skip_eval_before_train: bool = False

    @classmethod
    def from_args(cls, args: Namespace, num_rollout: int) -> TrainSchedule:
        return cls(
            num_rollout=num_rollout,
            save_interval=args.save_interval,
            eval_interval=args.eval_interval,
            saving=args.save is not None,
            evaluating=args.eval_interval is not None and args.eval_prompt_data is not None,
            skip_eval_before_train=args.skip_eval_before_train,
        )

    def is_last(self, rollout_id: int) -> bool:
        return rollout_id == self.num_rollout - 1

    def should_save(self, rollout_id: int) -> bool:
        """Every ``--save-interval`` steps and after the last one (a run never ends unsaved)."""
        if not self.saving:
            return False
        return is_periodic_step(rollout_id, self.save_interval) or self.is_last(rollout_id)

    def should_eval(self, rollout_id: int) -> bool:
        """After every ``--eval-interval`` steps and after the last one."""
        if not self.evaluating:
            return False
        return is_periodic_step(rollout_id, self.eval_interval) or self.is_last(rollout_id)

    def should_eval_before(self, start_rollout_id: int) -> bool:
        """Evaluate the starting weights once, unless resuming or told not to."""
        return self.evaluating and start_rollout_id == 0 and not self.skip_eval_before_train
