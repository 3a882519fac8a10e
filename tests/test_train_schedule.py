"""The periodic eval/save decision and the placement layout (pure functions, no Ray)."""

from argparse import Namespace

import pytest

from vime.ray.placement_group import placement_layout
from vime.utils.train_schedule import TrainSchedule, is_periodic_step


def test_periodic_steps():
    assert [s for s in range(10) if is_periodic_step(s, 3)] == [2, 5, 8]
    assert not any(is_periodic_step(s, None) for s in range(5))


def test_schedule_saves_periodically_and_at_the_end():
    schedule = TrainSchedule(num_rollout=7, save_interval=3, eval_interval=2, saving=True, evaluating=True)
    assert [s for s in range(7) if schedule.should_save(s)] == [2, 5, 6]
    assert [s for s in range(7) if schedule.should_eval(s)] == [1, 3, 5, 6]
    assert schedule.should_eval_before(0) and not schedule.should_eval_before(3)  # not when resuming
    quiet = TrainSchedule(num_rollout=7, save_interval=3, eval_interval=None, saving=False, evaluating=False)
    assert not any(quiet.should_save(s) or quiet.should_eval(s) for s in range(7))


def _args(**kw):
    base = dict(actor_num_nodes=2, actor_num_gpus_per_node=8, rollout_num_gpus=8, colocate=False,
                debug_rollout_only=False, debug_train_only=False, rollout_external_engine_addrs=None)  # fmt: skip
    return Namespace(**(base | kw))


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({}, (16, 8, 24, 16)),
        ({"rollout_num_gpus": 0}, (16, 0, 16, 16)),  # an explicit zero is zero: no rollout bundles
        ({"colocate": True, "rollout_num_gpus": 16}, (16, 16, 16, 0)),
        ({"colocate": True, "rollout_num_gpus": 0}, (16, 0, 16, 0)),
        ({"debug_train_only": True}, (16, 0, 16, 16)),
        ({"debug_rollout_only": True}, (0, 8, 8, 0)),
        ({"rollout_external_engine_addrs": ["h:1"]}, (16, 0, 16, 16)),
    ],
)
def test_placement_layout(kw, expected):
    layout = placement_layout(_args(**kw))
    assert (layout.actor_gpus, layout.rollout_gpus, layout.total_gpus, layout.rollout_offset) == expected


def test_no_gpus_means_cpu_processes():
    layout = placement_layout(_args(), gpus_available=False)
    assert layout.total_gpus == 0 and layout.actor_gpus == 0
