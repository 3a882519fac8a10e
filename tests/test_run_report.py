"""What a run leaves and says: summary, reward plot, run dir layout, warm-start progress without a TTY."""

from __future__ import annotations

from argparse import Namespace

import pytest

from vime.utils.run_report import finish_report, prepare_run_dir, summarize, summary_lines


def _records():
    rewards = [0.2, 0.25, 0.3, 0.3, 0.35, 0.4, 0.45, 0.4, 0.5, 0.55]
    return [
        {"step": i, "rollout/raw_reward": r, "rollout/full_reward_share": r, "time/step": 2.0}
        | ({"eval/arith": 0.3 + i / 100} if i % 5 == 4 else {})
        for i, r in enumerate(rewards)
    ]


def test_summary_and_plot(tmp_path):
    pytest.importorskip("matplotlib")
    layout = prepare_run_dir(
        Namespace(run_dir=str(tmp_path / "run"), save=None, metrics_jsonl=None, vllm_log_dir=None)
    )
    summary, plot = finish_report(_records(), layout)
    assert summary["reward"] == pytest.approx(
        {"first": 0.2, "last": 0.55, "best": 0.55, "mean_first": 0.28, "mean_last": 0.46}
    )
    assert summary["eval/arith"] == pytest.approx(0.39) and summary["seconds"] == 20.0
    assert plot == layout.plot and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert layout.summary.is_file() and layout.logs.is_dir()
    assert any("reward: 0.200 -> 0.550" in line for line in summary_lines(summary))


def test_default_run_dir_is_per_run_under_save(tmp_path):
    args = Namespace(run_dir=None, save=str(tmp_path / "ckpt"), metrics_jsonl=None, vllm_log_dir=None)
    layout = prepare_run_dir(args)
    assert layout.root.parent == tmp_path / "ckpt" / "runs"  # two runs never share a metrics file
    assert args.metrics_jsonl == str(layout.metrics) and args.vllm_log_dir == str(layout.logs)


def test_summary_of_no_steps():
    assert summarize([]) == {"steps": 0}


def test_warm_start_reports_progress_without_a_tty(tiny_model_dir, tmp_path, capsys):
    from vime.warm_start import warm_start_tiny_model

    warm_start_tiny_model(tiny_model_dir, tmp_path / "warm", steps=20)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[vime] warm start")]
    assert len(lines) == 11 and lines[-1].endswith("20/20 steps"), lines
