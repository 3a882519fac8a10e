"""What the rollout-side contracts share: a local tokenizer, prompt files, and the args and data
source that vime's framework would hand a rollout function, with an engine-free generate hook."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

from contract_support import FIXTURES, contract_args, make_args

ENGINE_FREE_GENERATE = f"{FIXTURES}.engine_free.generate"
N_PROMPTS = 8


def _builder_digest() -> str:
    """Changes when the tokenizer recipe does, so a cached tokenizer is never a stale one."""
    origin = importlib.util.find_spec("vime.utils.tiny_model").origin
    return hashlib.sha256(Path(origin).read_bytes()).hexdigest()[:12]


TOKENIZER_CACHE = Path(tempfile.gettempdir()) / f"vime-contract-tokenizer-seed0-{_builder_digest()}"


@functools.cache
def contract_tokenizer_dir() -> str:
    """The tiny local tokenizer (trained here, nothing downloaded), built once and shared by every
    contract run on this machine (deterministic: seed 0)."""
    if (TOKENIZER_CACHE / "tokenizer.json").is_file():
        return str(TOKENIZER_CACHE)
    from vime.utils.tiny_model import build_tokenizer

    scratch = Path(tempfile.mkdtemp(prefix="vime-contract-tokenizer-"))
    build_tokenizer(scratch, seed=0)
    try:
        scratch.rename(TOKENIZER_CACHE)  # atomic; another run may have won the race
    except OSError:  # lost the race: use the winner's, drop ours
        if (TOKENIZER_CACHE / "tokenizer.json").is_file():
            shutil.rmtree(scratch, ignore_errors=True)
            return str(TOKENIZER_CACHE)
        return str(scratch)
    return str(TOKENIZER_CACHE)


def write_prompts(path: Path) -> Path:
    rows = [{"input": f"What is {i}+{i}?", "label": str(2 * i)} for i in range(N_PROMPTS)]
    rows[1]["label"] = {"ground_truth": "2"}  # a dict label among the string ones
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def plugin_settings() -> dict[str, Any]:
    """What a plugin under contract needs from its launch: an engine and flags.

    ``VIME_CONTRACT_ENGINE_URL`` (a router or engine, ``http://host:port``) and
    ``VIME_CONTRACT_HF_CHECKPOINT`` (its model, for the tokenizer) point a hook that calls vLLM at
    a real engine; ``VIME_CONTRACT_ARGS`` is a JSON object of other flags the plugin reads, as its
    launch script sets them (``{"max_tokens_per_gpu": 512}``).
    """
    settings: dict[str, Any] = contract_args()
    url = os.environ.get("VIME_CONTRACT_ENGINE_URL")
    if url:
        parts = urlsplit(url)
        settings |= {"vllm_router_ip": parts.hostname, "vllm_router_port": parts.port}
    if os.environ.get("VIME_CONTRACT_HF_CHECKPOINT"):
        settings["hf_checkpoint"] = os.environ["VIME_CONTRACT_HF_CHECKPOINT"]
    return settings


def rollout_args(tmp_path: Path, **overrides: Any) -> SimpleNamespace:
    prompts = write_prompts(tmp_path / "prompts.jsonl")
    settings = {
        "hf_checkpoint": contract_tokenizer_dir(),
        "prompt_data": str(prompts),
        "input_key": "input",
        "label_key": "label",
        "metadata_key": "metadata",
        "apply_chat_template": False,
        "rollout_global_dataset": True,
        "eval_prompt_data": ["toy", str(prompts)],
        "custom_generate_function_path": ENGINE_FREE_GENERATE,
        "over_sampling_batch_size": 2,
        "rollout_max_response_len": 64,
        "vllm_server_concurrency": 8,
        "rollout_num_engines_total": 1,
        "rollout_request_retry_timeout": 5,
        "save": None,
        "load": None,
        **plugin_settings(),
        **overrides,
    }
    return make_args(**settings)


def default_data_source(args: SimpleNamespace):
    """The data source vime hands a rollout function by default."""
    from vime.rollout.data_source import RolloutDataSourceWithBuffer

    return RolloutDataSourceWithBuffer(args)
