"""Contract: custom generate functions (``--custom-generate-function-path``, or per sample
``Sample.generate_function_path``, which wins).

A plugin author provides::

    async def generate(args, sample: Sample, sampling_params: dict) -> Sample | list[Sample]

(an ``evaluation: bool`` keyword is passed too when the function declares it). It receives a
PENDING sample whose ``prompt`` is set and vLLM sampling params (``max_tokens``, ``temperature``,
...). It returns the sample generated: ``tokens`` = prompt ids + response ids, ``response`` /
``response_length`` set, at most ``max_tokens`` response tokens, ``rollout_log_probs`` and
``loss_mask`` (when set) one entry per response token, and a final status (COMPLETED /
TRUNCATED / ABORTED / FAILED, never PENDING). It may leave ``reward`` unset: vime scores it.
A multi-turn hook may return several samples. No engine runs here, so a hook that itself calls
vLLM can only be checked against a running engine; with no path, the dispatch of vime's rollout
(which hook wins) is tested with engine-free hooks.

    python tools/run_contract.py tests/contract/test_generate_function_contract.py \\
        --custom-generate-function-path my_pkg.agent.generate
"""

from __future__ import annotations

import contextlib
import os

import pytest
from contract_support import (
    FIXTURES,
    ContractViolation,
    call_hook,
    check_callable_as,
    check_is_async,
    check_sample,
    is_overridden,
    load_hook,
    make_sample,
)
from rollout_support import rollout_args

from vime.utils.types import Sample

FLAG = "custom-generate-function-path"
DEFAULT = f"{FIXTURES}.engine_free.generate"
CALL = "await fn(args, sample, sampling_params)"


def _sampling_params(args):
    from vime.rollout.sampling_params import build_sampling_params

    return build_sampling_params(args)


@pytest.mark.skipif(not is_overridden(FLAG), reason="needs a plugin (vime's own generate needs an engine)")
def test_generate_returns_generated_samples(tmp_path):
    """A hook that calls vLLM talks to VIME_CONTRACT_ENGINE_URL, else to the stub engine mock below."""
    path, fn = load_hook(FLAG, DEFAULT)
    with contextlib.ExitStack() as stack:
        engine = {}
        if not os.environ.get("VIME_CONTRACT_ENGINE_URL"):
            stub = stack.enter_context(StubEngine([]))
            engine = {"vllm_router_ip": "127.0.0.1", "vllm_router_port": stub.port}
        args = rollout_args(tmp_path, **engine)
        params = _sampling_params(args)
        sample = make_sample(0)
        check_callable_as(fn, path, "generate function", CALL, args, sample, params)
        check_is_async(fn, path, "generate function", CALL)
        result = call_hook(fn, f"generate function {path}", args, sample, dict(params))
    samples = result if isinstance(result, list) else [result]
    if not samples:
        raise ContractViolation(
            f"generate function {path}: returned an empty list; return at least one Sample"
        )
    for i, generated in enumerate(samples):
        check_sample(generated, f"generate function {path}: returned sample {i}", generated=False)
        if generated.status == Sample.Status.PENDING:
            raise ContractViolation(
                f"generate function {path}: returned sample {i} is still PENDING; set COMPLETED / TRUNCATED / ABORTED / FAILED"
            )
        turns = model_turns(generated)
        if max(turns, default=0) > params["max_tokens"]:
            raise ContractViolation(
                f"generate function {path}: returned sample {i} has a model turn of {max(turns)} tokens, "
                f"over sampling_params['max_tokens']={params['max_tokens']}"
            )
        check_observations_masked(generated, f"generate function {path}: returned sample {i}")


def model_turns(sample: Sample) -> list[int]:
    """Lengths of the model's turns: runs of loss-mask 1 (the whole response when there is no mask).

    A multi-turn hook interleaves model tokens with tool / environment tokens (loss mask 0); each
    request to the engine is bounded by ``max_tokens``, the whole response is not.
    """
    if sample.loss_mask is None:
        return [sample.response_length]
    turns, run = [], 0
    for bit in sample.loss_mask:
        if bit:
            run += 1
        elif run:
            turns.append(run)
            run = 0
    return turns + ([run] if run else [])


def check_observations_masked(sample: Sample, what: str) -> None:
    """Tokens the model did not generate (loss mask 0) carry rollout log probability 0."""
    if sample.loss_mask is None or sample.rollout_log_probs is None:
        return
    for position, (bit, log_prob) in enumerate(zip(sample.loss_mask, sample.rollout_log_probs, strict=True)):
        if not bit and log_prob != 0.0:
            raise ContractViolation(
                f"{what}: response token {position} has loss mask 0 but rollout log prob {log_prob}; "
                "append tool output with append_response_tokens(..., trainable=False)"
            )


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's dispatch")
def test_dispatch_precedence_sample_path_then_args_path(tmp_path):
    """Sample.generate_function_path beats --custom-generate-function-path; `evaluation` is passed when declared."""
    from vime.rollout.vllm_rollout import generate_and_rm

    args = rollout_args(
        tmp_path, custom_generate_function_path=f"{FIXTURES}.engine_free.generate_tagged_args"
    )
    params = _sampling_params(args)
    from_args = call_hook(generate_and_rm, "generate_and_rm", args, make_sample(0), dict(params))
    assert from_args.metadata["generated_by"] == "from_args" and from_args.reward == 1
    overridden = make_sample(1)
    overridden.generate_function_path = f"{FIXTURES}.engine_free.generate_tagged_sample"
    result = call_hook(generate_and_rm, "generate_and_rm", args, overridden, dict(params), evaluation=True)
    assert result.metadata["generated_by"] == "from_sample(evaluation=True)"


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's dispatch")
def test_finished_samples_are_not_generated_again(tmp_path):
    """A COMPLETED sample carried over by a partial rollout is not sent to the generate hook again."""
    from vime.rollout.vllm_rollout import generate_and_rm

    args = rollout_args(tmp_path)
    done = make_sample(0)
    done.tokens, done.response, done.response_length, done.status = (
        [1, 2],
        "\\boxed{2}",
        1,
        Sample.Status.COMPLETED,
    )
    result = call_hook(generate_and_rm, "generate_and_rm", args, done, _sampling_params(args))
    assert "generated_by" not in result.metadata and result.response == "\\boxed{2}"


class StubEngine:
    """A MOCK of vLLM's ``POST /inference/v1/generate`` (token in, token out), in a thread.

    A contract runs with no engine (CPU, seconds); this stands in for one so that vime's default
    generate hook, and a plugin's calls, are checked on the shape of vLLM's answer. The real engine
    is exercised by the rollout integration tests. ``finish_reasons`` are answered in order, then
    "stop". ``POST /v1/completions`` (a text prompt, through vime.compat) answers likewise.
    """

    def __init__(self, finish_reasons: list[str]):
        self.finish_reasons = list(finish_reasons)
        self.requests: list[dict] = []

    async def _generate(self, request):
        from aiohttp import web

        body = await request.json()
        self.requests.append(body)
        reason = self.finish_reasons.pop(0) if self.finish_reasons else "stop"
        params = body.get("sampling_params", body)
        count = 0 if reason == "abort" else min(3, int(params["max_tokens"]))
        tokens = [40 + i for i in range(count)]
        log_probs = [-0.5 - i for i in range(count)]
        choice = {"token_ids": tokens, "finish_reason": reason, "text": "".join(chr(t) for t in tokens)}
        if "prompt" in body:  # /v1/completions
            choice["logprobs"] = {"token_logprobs": log_probs} if body.get("logprobs") is not None else None
        else:
            choice["logprobs"] = {"content": [{"logprob": x} for x in log_probs]}
            choice["weight_versions"] = [{"version": "7", "start": 0, "end": count}]
        return web.json_response(
            {"choices": [choice], "usage": {"prompt_tokens": 1, "completion_tokens": count}}
        )

    def __enter__(self):
        import asyncio
        import socket
        import threading

        from aiohttp import web

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.loop = asyncio.new_event_loop()
        app = web.Application()
        app.router.add_post("/inference/v1/generate", self._generate)
        app.router.add_post("/v1/completions", self._generate)
        self.runner = web.AppRunner(app)
        self.loop.run_until_complete(self.runner.setup())
        self.loop.run_until_complete(web.TCPSite(self.runner, "127.0.0.1", self.port).start())
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        import asyncio

        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's default generate hook")
def test_default_generate_against_a_stub_engine_mock(tmp_path):
    """vime's generate: prompt ids + response ids, aligned log probs, weight versions, and the
    finish reason as status (stop -> COMPLETED, length -> TRUNCATED, abort -> ABORTED)."""
    from vime.rollout.generate import generate, prompt_token_ids
    from vime.rollout.vllm_rollout import GenerateState
    from vime.utils.http_utils import run

    with StubEngine(["stop", "length", "abort"]) as engine:
        args = rollout_args(tmp_path, vllm_router_ip="127.0.0.1", vllm_router_port=engine.port)
        args.custom_generate_function_path = None
        params = _sampling_params(args)
        results = [run(generate(args, make_sample(i), dict(params))) for i in range(3)]
    prompt_ids = prompt_token_ids(make_sample(0), GenerateState(args).tokenizer)
    assert (
        engine.requests[0]["token_ids"] == prompt_ids
        and engine.requests[0]["sampling_params"]["max_tokens"] == 64
    )
    done, cut, aborted = results
    assert done.tokens == prompt_ids + [40, 41, 42] and done.response_length == 3
    assert done.rollout_log_probs == [-0.5, -1.5, -2.5] and done.weight_versions == ["7"]
    assert [r.status for r in results] == [
        Sample.Status.COMPLETED,
        Sample.Status.TRUNCATED,
        Sample.Status.ABORTED,
    ]
    assert aborted.response_length == 0
    for sample in (done, cut):
        check_sample(sample, "vime's default generate", generated=False)


if __name__ == "__main__":
    from contract_support import run_this_file

    run_this_file(__file__)
