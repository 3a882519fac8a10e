"""vime's default rollout function against the session's real engine + router: partial rollout,
dynamic filtering, custom generate hooks, eval rollouts, debug data."""

import asyncio
import threading
import time

import pytest

from vime.rollout.data_source import make_data_source
from vime.rollout.filter_hub.base_types import DynamicFilterOutput
from vime.rollout.generate import generate
from vime.rollout.vllm_rollout import generate_and_rm, generate_rollout
from vime.utils.http_utils import run
from vime.utils.types import RolloutFnEvalOutput, Sample

pytestmark = pytest.mark.slow


# The engine varied_length_generate freezes once the batch is full (set by the partial-rollout test,
# which resumes the engine whatever happens), and how many samples have gone to it and come back.
VARIED = {"engine": None, "sent": 0, "short_done": 0}
SHORT_REQUESTS, LONG_REQUESTS = 4, 8  # groups 0..1 and 2..5 of the over-sampled 6, two samples each


async def varied_length_generate(args, sample, sampling_params):
    """Generate hook: the first two groups stop after 4 tokens, the rest may run 300 (ignoring EOS).

    With ``VARIED["engine"]`` set, the engine is paused with its requests kept as soon as the last
    short sample is back: the long ones stay frozen a few tokens in until the rollout's abort lands,
    however fast the machine generates.
    """
    long = sample.group_index >= 2
    params = dict(sampling_params, ignore_eos=True, max_tokens=300 if long else 4)
    VARIED["sent"] += 1
    sample = await generate(args, sample, params)
    sample.metadata["hook"] = "varied"
    engine = VARIED["engine"]
    if engine is not None and not long:
        VARIED["short_done"] += 1
        if VARIED["short_done"] == SHORT_REQUESTS:  # groups 0 and 1 fill the batch: freeze the rest
            await asyncio.to_thread(engine.pause, "keep")
    return sample


def _wait_until_sent(count: int, settle_s: float = 2.0, timeout_s: float = 120.0) -> None:
    """Until ``count`` requests went out, then ``settle_s`` more for them to reach the paused engine
    (a paused engine does not step, so its Prometheus gauges cannot say how many it holds)."""
    deadline = time.monotonic() + timeout_s
    while VARIED["sent"] < count:
        assert time.monotonic() < deadline, f"the rollout never sent {count} requests"
        time.sleep(0.02)
    time.sleep(settle_s)


def drop_odd_groups(args, group, **kwargs):
    keep = group[0].group_index % 2 == 0
    return DynamicFilterOutput(keep=keep, reason=None if keep else "odd_group")


async def tag_generate(args, sample, sampling_params, evaluation=False):
    sample = await generate(args, sample, dict(sampling_params, max_tokens=3))
    sample.metadata["tagged"] = evaluation
    return sample


def _args(make_rollout_args, rollout_manager, *flags):
    args = make_rollout_args(*flags)
    args.vllm_router_ip, args.vllm_router_port = (
        rollout_manager.args.vllm_router_ip,
        rollout_manager.args.vllm_router_port,
    )
    return args


def test_partial_rollout_aborts_in_flight_and_continues_next_step(
    make_rollout_args, rollout_manager, vllm_engine
):
    args = _args(
        make_rollout_args, rollout_manager,
        "--over-sampling-batch-size", "6", "--partial-rollout", "--mask-offpolicy-in-partial-rollout",
        "--rollout-max-response-len", "300",
        "--custom-generate-function-path", "test_rollout_function.varied_length_generate",
    )  # fmt: skip
    data_source = make_data_source(args)
    # Every request of step 0 waits in the paused engine, so all start in the same step; the hook
    # pauses it again when the short ones are back, before the rollout's abort.
    result: dict = {}
    rollout = threading.Thread(target=lambda: result.update(out=generate_rollout(args, 0, data_source)))
    VARIED.update(engine=vllm_engine.client, sent=0, short_done=0)
    vllm_engine.client.pause("keep")
    try:
        rollout.start()
        _wait_until_sent(SHORT_REQUESTS + LONG_REQUESTS)
        vllm_engine.client.resume()
        rollout.join(timeout=300)
        assert not rollout.is_alive() and vllm_engine.client.is_paused()
    finally:
        VARIED.update(engine=None, sent=0, short_done=0)
        vllm_engine.client.resume()
        rollout.join(timeout=300)
    output = result["out"]
    kept = [s for group in output.samples for s in group]

    def seen(samples) -> list:  # what a failure shows: group, status, length of each sample
        return [(s.group_index, s.status.value, s.response_length) for s in samples]

    assert [s.group_index for s in kept] == [0, 0, 1, 1], seen(kept)
    assert all(
        s.status == Sample.Status.TRUNCATED and s.response_length == 4 and s.reward is not None for s in kept
    ), seen(kept)

    buffered = data_source.buffer
    partial = [s for group in buffered for s in group]
    assert len(buffered) == 4 and len({s.index for s in kept + partial}) == len(kept + partial), seen(partial)
    # The hook froze the long requests a few tokens in: the abort cut them. (One whose request reached
    # the engine late may have no token yet; one that somehow finished goes back whole.)
    cut = [s for s in partial if s.status == Sample.Status.ABORTED]
    surplus = [s for s in partial if s.status != Sample.Status.ABORTED]
    assert all(s.status == Sample.Status.TRUNCATED and s.response_length == 300 for s in surplus), seen(
        partial
    )
    started = [s for s in cut if s.response_length > 0]
    assert started, f"no request was cut mid-generation: {seen(partial)}"
    assert all(0 < s.response_length < 300 and s.metadata["start_rollout_id"] == 0 for s in started), seen(
        started
    )
    before = {s.index: (s.response_length, list(s.tokens)) for s in started}

    output = generate_rollout(args, 1, data_source)
    # Every partial sample of step 0 is now either in the batch or back in the buffer: never lost,
    # never restarted from scratch; its old tokens are kept and masked out of the loss.
    now = {s.index: s for group in output.samples + data_source.buffer for s in group}
    assert set(before) <= set(now)
    grew = 0
    for index, (old_length, old_tokens) in before.items():
        s = now[index]
        assert s.tokens[: len(old_tokens)] == old_tokens and s.response_length >= old_length
        assert s.loss_mask[:old_length] == [0] * old_length
        assert s.loss_mask[old_length:] == [1] * (s.response_length - old_length)
        assert len(s.rollout_log_probs) == s.response_length
        grew += s.response_length > old_length
    assert grew, f"no partial sample was continued: {seen(now.values())}"
    kept_now = [s for group in output.samples for s in group]
    assert all(s.status == Sample.Status.TRUNCATED and s.response_length in (4, 300) for s in kept_now), seen(
        kept_now
    )


def test_dynamic_filter_drops_groups_and_over_sampling_refills(make_rollout_args, rollout_manager):
    args = _args(
        make_rollout_args, rollout_manager,
        "--over-sampling-batch-size", "2", "--rollout-max-response-len", "4",
        "--dynamic-sampling-filter-path", "test_rollout_function.drop_odd_groups",
    )  # fmt: skip
    output = generate_rollout(args, 0, make_data_source(args))
    assert [g[0].group_index for g in output.samples] == [0, 2]
    assert output.metrics["rollout/dynamic_filter/drop_odd_group"] >= 1


def test_per_sample_generate_hook_overrides_the_default(make_rollout_args, rollout_manager):
    args = _args(make_rollout_args, rollout_manager)
    sample = Sample(
        prompt="What is 1+1?", label="2", generate_function_path="test_rollout_function.tag_generate"
    )
    sample = run(
        generate_and_rm(args, sample, {"max_tokens": 16, "temperature": 1.0, "logprobs": 0}, evaluation=True)
    )
    assert sample.metadata["tagged"] is True and sample.response_length == 3 and sample.reward is not None


def test_eval_rollout_scores_every_eval_prompt(make_rollout_args, rollout_manager, arithmetic_prompts):
    args = _args(
        make_rollout_args, rollout_manager,
        "--eval-prompt-data", "arith", str(arithmetic_prompts), "--eval-max-response-len", "6",
        "--n-samples-per-eval-prompt", "2", "--eval-temperature", "0",
    )  # fmt: skip
    output = generate_rollout(args, 0, None, evaluation=True)
    assert isinstance(output, RolloutFnEvalOutput)
    result = output.data["arith"]
    assert len(result["rewards"]) == len(result["truncated"]) == len(result["samples"]) == 32
    assert [s.index for s in result["samples"]] == list(range(32))
    pairs = result["samples"][0::2], result["samples"][1::2]
    assert all(a.tokens == b.tokens for a, b in zip(*pairs, strict=True))  # temperature 0: same answer twice


def test_manager_generate_returns_train_data_that_debug_data_round_trips(rollout_manager, tmp_path):
    from vime.rollout.debug_data import load_rollout_data, save_rollout_data

    data = rollout_manager.generate(5)
    assert len(data["tokens"]) == 4 and len(data["rollout_log_probs"][0]) == data["response_lengths"][0]
    template = str(tmp_path / "rollout_{rollout_id}.pkl")
    save_rollout_data(template, 5, data)
    assert load_rollout_data(template, 5) == data
