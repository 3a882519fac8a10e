"""Metrics records: JSONL file, rank reduction, and W&B offline runs that write a real run dir."""

import json
from argparse import Namespace

import pytest

from vime.utils.metrics import MetricsLogger, reduce_rank_metrics
from vime.utils.wandb_utils import wandb_mode


def _args(tmp_path, **kw):
    base = dict(metrics_jsonl=None, run_dir=str(tmp_path / "run"), use_wandb=False, wandb_mode=None, wandb_key=None,
                wandb_host=None, wandb_dir=None, wandb_project="vime-test", wandb_team=None, wandb_group=None,
                wandb_run_id=None)  # fmt: skip
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
