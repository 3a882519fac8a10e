"""Checkpoint directory layout: atomic publish, latest marker, nothing destroyed unless asked."""

import pytest

from vime.backends.torch_utils import checkpoint as ckpt


def _publish(root, step, text="w"):
    staging = ckpt.staging_dir(root, step)
    (staging / "weights.txt").write_text(text)
    return ckpt.commit(root, step, staging)


def test_publish_and_latest(tmp_path):
    assert ckpt.latest_iteration(tmp_path) is None
    _publish(tmp_path, 0)
    _publish(tmp_path, 3)
    assert ckpt.latest_iteration(tmp_path) == 3
    assert (ckpt.iteration_dir(tmp_path, 3) / "weights.txt").read_text() == "w"
    assert not list(tmp_path.glob(".iter_*"))  # no staging left behind


def test_unfinished_save_leaves_previous_step_in_charge(tmp_path):
    _publish(tmp_path, 1)
    staging = ckpt.staging_dir(tmp_path, 2)  # a crash here: never committed
    (staging / "weights.txt").write_text("half")
    assert ckpt.latest_iteration(tmp_path) == 1


def test_resaving_a_step_keeps_the_old_one(tmp_path):
    _publish(tmp_path, 1, "old")
    _publish(tmp_path, 1, "new")
    assert (ckpt.iteration_dir(tmp_path, 1) / "weights.txt").read_text() == "new"
    (kept,) = tmp_path.glob("iter_0000001.replaced-*")
    assert (kept / "weights.txt").read_text() == "old"


def test_prune_only_when_asked_and_only_this_runs_steps(tmp_path):
    for step in range(4):
        _publish(tmp_path, step)
    assert ckpt.prune(tmp_path, None, [0, 1, 2, 3]) == []
    removed = ckpt.prune(tmp_path, 2, [1, 2, 3])  # step 0 is another run's
    assert [p.name for p in removed] == ["iter_0000001"]
    assert ckpt.iteration_dir(tmp_path, 0).is_dir()
    assert ckpt.latest_iteration(tmp_path) == 3


def test_prune_never_removes_the_marker_step(tmp_path):
    for step in (5, 6, 7):
        _publish(tmp_path, step)
    ckpt.commit(tmp_path, 5, ckpt.staging_dir(tmp_path, 5))  # re-saved: the marker names 5
    removed = ckpt.prune(tmp_path, 1, [5, 6, 7])
    assert [p.name for p in removed] == ["iter_0000006"]
    assert ckpt.latest_iteration(tmp_path) == 5


def test_bad_marker_is_one_line(tmp_path):
    (tmp_path / ckpt.LATEST_FILE).write_text("banana\n")
    with pytest.raises(ValueError, match="not a step number: fix or remove that file"):
        ckpt.latest_iteration(tmp_path)
    (tmp_path / ckpt.LATEST_FILE).write_text("5\n")
    with pytest.raises(ValueError, match="names step 5 but .*iter_0000005 is missing"):
        ckpt.latest_iteration(tmp_path)
