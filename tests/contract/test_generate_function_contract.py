"""Contract: custom generate functions (``--custom-generate-function-path``, or per sample
``Sample.generate_function_path``, which wins).

A plugin author provides::

    async def generate(args, sample: Sample, sampling_params: dict) -> Sample | list[Sample]

(an ``evaluation: bool`` keyword is passed too when the function declares it). It receives a
PENDING sample whose ``prompt`` is set (``--prompt JSON`` gives your data's shape) and vLLM
sampling params (``max_tokens``, ``temperature``, ...), and ``args`` whose
``vllm_router_ip/port`` name the contract's engine: a counting proxy in front of
``VIME_CONTRACT_ENGINE_URL`` (a real engine or router), else a mock of vLLM's generate routes.
It must have reached that engine (at least one answered generate request) and return what it
generated: ``tokens`` = the ids of a prompt it sent the engine + the response ids,
``response_length`` of them the response's, at most ``max_tokens`` per model turn,
``rollout_log_probs`` (required for COMPLETED / TRUNCATED) and ``loss_mask`` (when set) one entry
per response token, tokens it did not generate masked with log probability 0, and a status that
says what happened: COMPLETED / TRUNCATED with a response, ABORTED only when the engine aborted
(with the mock, an engine that aborts every request must give ABORTED or FAILED samples),
never PENDING. It may leave ``reward`` unset: vime scores it. It may return several samples.
With no path, the dispatch of vime's rollout (which hook wins) is tested with engine-free hooks.

    python tools/run_contract.py tests/contract/test_generate_function_contract.py \\
        --custom-generate-function-path my_pkg.agent.generate
"""

from __future__ import annotations

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
from engine_support import ContractEngine, prompt_ids_sent
from rollout_support import rollout_args

from vime.utils.types import Sample

FLAG = "custom-generate-function-path"
DEFAULT = f"{FIXTURES}.engine_free.generate"
CALL = "await fn(args, sample, sampling_params)"


def _sampling_params(args):
    from vime.rollout.sampling_params import build_sampling_params

    return build_sampling_params(args)


def _run_plugin(tmp_path, engine: ContractEngine):
    path, fn = load_hook(FLAG, DEFAULT)
    args = rollout_args(tmp_path, **engine.settings)
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
    return path, args, params, samples


def _check_reached_engine(path: str, engine: ContractEngine) -> None:
    if engine.calls == 0:
        raise ContractViolation(
            f"generate function {path}: returned without one answered generate request to the engine "
            f"its args name (args.vllm_router_ip/port = {engine.url}); a sample that no engine "
            "produced cannot be trained on"
        )


def _check_prompt_prefix(path: str, i: int, sample: Sample, sent: set[tuple[int, ...]]) -> None:
    """``tokens`` = the prompt the engine was sent + the response: the part before the response
    must be the token ids of one of the plugin's engine requests."""
    prompt_len = len(sample.tokens) - sample.response_length
    prefix = tuple(sample.tokens[:prompt_len])
    if prompt_len <= 0:
        raise ContractViolation(
            f"generate function {path}: returned sample {i} has no prompt tokens (len(tokens)={len(sample.tokens)}, "
            f"response_length={sample.response_length}); tokens must be the prompt's ids followed by the response's"
        )
    if prefix not in sent:
        raise ContractViolation(
            f"generate function {path}: returned sample {i}'s tokens do not start with a prompt it sent to the "
            f"engine: its first {prompt_len} tokens (len(tokens) - response_length) match none of the "
            f"{len(sent)} prompt(s) the engine received; set tokens = prompt ids + response ids"
        )


def _check_status(path: str, i: int, sample: Sample, engine: ContractEngine) -> None:
    """The status says what happened: a response for COMPLETED / TRUNCATED (with the engine's log
    probabilities, one per response token), ABORTED only when the engine aborted a request."""
    status = sample.status
    if status in (Sample.Status.COMPLETED, Sample.Status.TRUNCATED):
        if sample.response_length < 1:
            raise ContractViolation(
                f"generate function {path}: returned sample {i} is {status.name} with an empty response; "
                "a generation that produced nothing is ABORTED or FAILED"
            )
        if sample.rollout_log_probs is None:
            raise ContractViolation(
                f"generate function {path}: returned sample {i} is {status.name} without rollout_log_probs; "
                "ask the engine for them (logprobs / return_logprob) and keep one per response token"
            )
    if status == Sample.Status.ABORTED and "abort" not in engine.answers:
        raise ContractViolation(
            f"generate function {path}: returned sample {i} is ABORTED but the engine aborted none of its "
            f"{engine.calls} request(s) (finish reasons: {sorted({str(a) for a in engine.answers})})"
        )


def _tokenizer(args):
    from vime.rollout.generate_state import GenerateState

    return GenerateState(args).tokenizer


@pytest.mark.skipif(not is_overridden(FLAG), reason="needs a plugin (vime's own generate needs an engine)")
def test_generate_returns_generated_samples(tmp_path):
    """The plugin reaches the engine (VIME_CONTRACT_ENGINE_URL through a counting proxy, else the
    engine mock) and returns what it generated: prompt ids + response ids, status, log probs."""
    with ContractEngine(os.environ.get("VIME_CONTRACT_ENGINE_URL")) as engine:
        path, args, params, samples = _run_plugin(tmp_path, engine)
    _check_reached_engine(path, engine)
    sent = prompt_ids_sent(engine, _tokenizer(args))
    for i, generated in enumerate(samples):
        check_sample(generated, f"generate function {path}: returned sample {i}", generated=False)
        if generated.status == Sample.Status.PENDING:
            raise ContractViolation(
                f"generate function {path}: returned sample {i} is still PENDING; set COMPLETED / TRUNCATED / ABORTED / FAILED"
            )
        _check_prompt_prefix(path, i, generated, sent)
        _check_status(path, i, generated, engine)
        turns = model_turns(generated)
        if max(turns, default=0) > params["max_tokens"]:
            raise ContractViolation(
                f"generate function {path}: returned sample {i} has a model turn of {max(turns)} tokens, "
                f"over sampling_params['max_tokens']={params['max_tokens']}"
            )
        check_observations_masked(generated, f"generate function {path}: returned sample {i}")


@pytest.mark.skipif(
    not is_overridden(FLAG) or bool(os.environ.get("VIME_CONTRACT_ENGINE_URL")),
    reason="needs a plugin and the engine mock (a real engine cannot be told to abort every request)",
)
def test_generate_reports_an_engine_that_aborts(tmp_path):
    """When the engine aborts every request, no returned sample claims COMPLETED or TRUNCATED."""
    with ContractEngine(finish_reasons=["abort"] * 10_000) as engine:
        path, _args, _params, samples = _run_plugin(tmp_path, engine)
    _check_reached_engine(path, engine)
    for i, generated in enumerate(samples):
        if generated.status not in (Sample.Status.ABORTED, Sample.Status.FAILED):
            raise ContractViolation(
                f"generate function {path}: the engine aborted all {engine.calls} request(s) but returned "
                f"sample {i} is {generated.status.name}; read the finish reason and set ABORTED"
            )


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


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's default generate hook")
def test_default_generate_against_a_stub_engine_mock(tmp_path):
    """vime's generate: prompt ids + response ids, aligned log probs, weight versions, and the
    finish reason as status (stop -> COMPLETED, length -> TRUNCATED, abort -> ABORTED)."""
    from vime.rollout.generate import generate, prompt_token_ids
    from vime.rollout.vllm_rollout import GenerateState
    from vime.utils.http_utils import run

    with ContractEngine(finish_reasons=["stop", "length", "abort"]) as engine:
        args = rollout_args(tmp_path, **engine.settings)
        args.custom_generate_function_path = None
        params = _sampling_params(args)
        results = [run(generate(args, make_sample(i), dict(params))) for i in range(3)]
    prompt_ids = prompt_token_ids(make_sample(0), GenerateState(args).tokenizer)
    first = engine.requests[0][1]
    assert first["token_ids"] == prompt_ids and first["sampling_params"]["max_tokens"] == 64
    assert engine.calls == 3 and engine.answers == ["stop", "length", "abort"]
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
