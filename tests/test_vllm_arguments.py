"""``--vllm-*`` / ``--router-*``: generated from vLLM's and vllm-router's own parsers and checked by them."""

import argparse

import pytest

from vime.backends.vllm_utils.arguments import (
    PassThroughArgumentError,
    add_router_arguments,
    add_vllm_arguments,
    router_cli_args,
    router_parser,
    vllm_server_cli_args,
    vllm_server_parser,
)
from vime.utils.args import VIME_GROUPS, add_train_backend_arguments
from vime.utils.args.engines import add_engine_arguments


@pytest.fixture(scope="module")
def parser():
    p = argparse.ArgumentParser(exit_on_error=False)
    add_vllm_arguments(p)
    add_router_arguments(p)
    add_engine_arguments(p)
    return p


def test_every_vllm_option_is_mirrored_except_the_managed_ones(parser):
    managed = {"help", "model_tag", "model", "host", "port", "headless", "config", "worker_extension_cls"}
    expected = []
    for action in vllm_server_parser()._actions:
        names = [o for o in action.option_strings if o.startswith("--") and not o.startswith("--no-")]
        if names and action.dest not in managed:
            expected.append(names[0][2:])
    assert len(expected) > 250
    assert [f for f in expected if f"--vllm-{f}" not in parser._option_string_actions] == []
    for flag in ("model", "port", "host", "worker-extension-cls"):
        assert f"--vllm-{flag}" not in parser._option_string_actions


def test_values_round_trip_to_server_flags_and_explicit_zero_stays(parser):
    args = parser.parse_args(
        ["--vllm-max-num-seqs", "0", "--vllm-max-model-len", "1024", "--vllm-enable-prefix-caching",
         "--no-vllm-enforce-eager", "--vllm-served-model-name", "a", "b"]
    )  # fmt: skip
    tokens = vllm_server_cli_args(args, on_cpu=True)
    assert tokens[tokens.index("--max-num-seqs") + 1] == "0"
    assert "--enable-prefix-caching" in tokens and "--no-enforce-eager" in tokens
    assert "--enforce-eager" not in tokens  # an explicit choice beats the CPU default
    assert tokens[tokens.index("--served-model-name") + 1 : tokens.index("--served-model-name") + 3] == [
        "a",
        "b",
    ]
    assert tokens[tokens.index("--dtype") + 1] == "float32"  # CPU default when not given
    assert vllm_server_parser().parse_args(["--model", "m", *tokens]).max_num_seqs == 0


def test_unset_flags_are_not_passed(parser):
    assert vllm_server_cli_args(parser.parse_args([]), on_cpu=False) == []
    assert router_cli_args(parser.parse_args([])) == []


def test_bad_vllm_value_is_one_line_error_naming_the_flag(parser):
    args = parser.parse_args(["--vllm-max-num-seqs", "many"])
    with pytest.raises(PassThroughArgumentError) as info:
        vllm_server_cli_args(args, on_cpu=True)
    message = str(info.value)
    assert "\n" not in message and "--max-num-seqs" in message and "--vllm-*" in message


def test_router_flags_pass_through_and_are_validated(parser):
    args = parser.parse_args(["--router-policy", "round_robin", "--router-retry-max-retries", "3"])
    tokens = router_cli_args(args)
    assert tokens == ["--policy", "round_robin", "--retry-max-retries", "3"] or set(tokens) == {
        "--policy", "round_robin", "--retry-max-retries", "3"
    }  # fmt: skip
    assert router_parser().parse_args(tokens).policy == "round_robin"
    with pytest.raises(PassThroughArgumentError, match="--retry-max-retries"):
        router_cli_args(parser.parse_args(["--router-retry-max-retries", "x"]))
    with pytest.raises(argparse.ArgumentError):  # choices are kept: an unknown policy fails at parse time
        parser.parse_args(["--router-policy", "fastest"])


def test_engine_flags_are_defined_once():
    """vime's engine/router flags live in one group (utils/args/engines.py), among vime's own groups,
    and none of vime's flags is defined twice there."""
    own = argparse.ArgumentParser()
    add_train_backend_arguments(own)
    for add_group in VIME_GROUPS:
        add_group(own)  # argparse itself refuses a flag defined twice
    assert add_engine_arguments in VIME_GROUPS
    args = own.parse_args(["--rollout-num-engines", "0", "--rollout-external-engine-addrs", "h:1", "h:2"])
    assert args.rollout_num_engines == 0 and args.rollout_external_engine_addrs == ["h:1", "h:2"]
    assert args.vllm_server_concurrency == 512
