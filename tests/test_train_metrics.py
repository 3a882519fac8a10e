"""Metrics records: JSONL file, rank reduction, W&B offline runs that write a real run dir, TensorBoard."""

import json
from argparse import Namespace

import pytest

from vime.utils.metrics import MetricsLogger, reduce_rank_metrics
from vime.utils.wandb_utils import wandb_mode


def _args(tmp_path, **kw):
    base = dict(metrics_jsonl=None, run_dir=str(tmp_path / "run"), use_wandb=False, wandb_mode=None, wandb_key=None,
                wandb_host=None, wandb_dir=None, wandb_project="vime-test", wandb_team=None, wandb_group=None,
                wandb_run_id=None, wandb_random_suffix=True, use_tensorboard=False, tb_project_name=None, tb_experiment_name=None)  # fmt: skip
    return Namespace(**(base | kw))


def test_reduce_rank_metrics():
    ranks = [{"a": 1.0, "b": 2.0}, {"a": 3.0}]
    assert reduce_rank_metrics(ranks, "sum") == {"a": 4.0, "b": 2.0}
    assert reduce_rank_metrics(ranks, "mean") == {"a": 2.0, "b": 2.0}
    assert reduce_rank_metrics([None, {"a": 5.0}]) == {"a": 5.0}
    assert reduce_rank_metrics([]) == {}


def test_jsonl_gets_one_line_per_step(tmp_path):
    logger = MetricsLogger(_args(tmp_path))
    logger.log(0, {"rollout/raw_reward": 0.1})
    logger.log(1, {"rollout/raw_reward": 0.3, "time/step": 2.0})
    logger.finish()
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [0, 1]
    assert json.loads(lines[1])["rollout/raw_reward"] == 0.3


def test_wandb_mode_rules(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    assert wandb_mode(_args(tmp_path)) == "offline"
    assert wandb_mode(_args(tmp_path, wandb_key="k")) == "online"
    monkeypatch.setenv("WANDB_MODE", "offline")
    assert wandb_mode(_args(tmp_path, wandb_key="k")) == "offline"


@pytest.mark.slow
def test_offline_wandb_run_writes_a_run_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    logger = MetricsLogger(_args(tmp_path, use_wandb=True))
    logger.log(0, {"rollout/raw_reward": 0.25})
    logger.finish()
    runs = list((tmp_path / "run" / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    assert list(runs[0].glob("*.wandb")), "the offline run has no .wandb event file"


def _scalars(directory) -> dict[str, list[tuple[int, float]]]:
    """What TensorBoard itself reads back from the event files."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(directory))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_tensorboard_gets_every_numeric_metric_per_step(tmp_path, monkeypatch):
    pytest.importorskip("tensorboard")
    monkeypatch.delenv("TENSORBOARD_DIR", raising=False)
    logger = MetricsLogger(_args(tmp_path, use_tensorboard=True))
    logger.log(0, {"rollout/raw_reward": 0.25, "train/pg_loss": -1.5, "note": "text is not a scalar"})
    logger.log(1, {"rollout/raw_reward": 0.75})
    logger.finish()
    got = _scalars(tmp_path / "run" / "tensorboard")  # no project name, no $TENSORBOARD_DIR: the run dir
    assert got["rollout/raw_reward"] == [(0, 0.25), (1, 0.75)]
    assert got["train/pg_loss"] == [(0, -1.5)]
    assert "note" not in got


def test_tensorboard_directory_follows_slime(tmp_path, monkeypatch):
    from vime.utils.tensorboard_log import TensorboardConfig

    monkeypatch.delenv("TENSORBOARD_DIR", raising=False)
    cfg = TensorboardConfig(True, "proj", "exp", str(tmp_path / "run"))
    assert str(cfg.directory()) == "tensorboard_log/proj/exp"
    monkeypatch.setenv("TENSORBOARD_DIR", str(tmp_path / "tb"))
    assert cfg.directory() == tmp_path / "tb"


def test_use_tensorboard_without_the_package_is_one_line(tmp_path, monkeypatch, capsys):
    """The package is an extra: without it the launch stops in one line before anything starts.
    (Its absence is simulated: CI installs it to run the test above.)"""
    import importlib.util

    from vime.utils.tensorboard_log import TensorboardConfig, tensorboard_problem

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "tensorboard" else real(name, *a)
    )
    line = tensorboard_problem(TensorboardConfig(enabled=True))
    assert line is not None and "pip install 'vime[tensorboard]'" in line and "\n" not in line
    assert tensorboard_problem(TensorboardConfig(enabled=False)) is None
