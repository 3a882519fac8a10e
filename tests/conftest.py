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
