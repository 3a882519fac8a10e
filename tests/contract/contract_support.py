"""Shared checks for the hook contracts in ``tests/contract/``.

Every check raises ``ContractViolation`` (an AssertionError) whose message names the hook, the
dotted path under test and the exact mismatch, because that message is all a plugin author (or
the sync gate's report) gets to see.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import inspect
import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from vime.utils.misc import HookLoadError, load_function
from vime.utils.types import RolloutFnEvalOutput, RolloutFnTrainOutput, Sample

# dotted package of the deliberately broken / reference plugins: this folder ships in the wheel as vime/contracts
_SHIPPED = Path(__file__).resolve().parent.match("vime/contracts")
FIXTURES = "vime.contracts.fixtures" if _SHIPPED else "tests.contract.fixtures"


class ContractViolation(AssertionError):
    """A plugin does not satisfy its hook's contract."""


# ----- which hook is under test ---------------------------------------------------------------
def env_var_for(flag: str) -> str:
    return "VIME_CONTRACT_" + flag.upper().replace("-", "_")


def hook_path(flag: str, default: str) -> str:
    """The dotted path given as ``--<flag>`` to run_contract, else vime's default."""
    return os.environ.get(env_var_for(flag)) or default


def is_overridden(flag: str) -> bool:
    return bool(os.environ.get(env_var_for(flag)))


def load_hook(flag: str, default: str) -> tuple[str, Callable[..., Any]]:
    path = hook_path(flag, default)
    try:
        return path, load_function(path)
    except HookLoadError as exc:
        raise ContractViolation(f"--{flag}: {exc}") from None


# ----- the args namespace hooks receive --------------------------------------------------------
CONTRACT_ARGS = {
    "n_samples_per_prompt": 2,
    "rollout_batch_size": 2,
    "over_sampling_batch_size": None,
    "n_samples_per_eval_prompt": 1,
    "global_batch_size": 4,
    "rollout_max_response_len": 16,
    "rollout_max_prompt_len": None,
    "rollout_temperature": 1.0,
    "rollout_top_p": 1.0,
    "rollout_top_k": -1,
    "rollout_stop": None,
    "rollout_stop_token_ids": None,
    "rollout_skip_special_tokens": False,
    "rollout_seed": 42,
    "rollout_shuffle": False,
    "advantage_estimator": "grpo",
    "rewards_normalization": True,
    "grpo_std_normalization": True,
    "reward_key": None,
    "eval_reward_key": None,
    "rm_type": "math",
    "rm_url": None,
    "group_rm": False,
    "custom_rm_path": None,
    "custom_generate_function_path": None,
    "custom_reward_post_process_path": None,
    "custom_convert_samples_to_train_data_path": None,
    "dynamic_sampling_filter_path": None,
    "buffer_filter_path": None,
    "rollout_sample_filter_path": None,
    "rollout_all_samples_process_path": None,
    "partial_rollout": False,
    "mask_offpolicy_in_partial_rollout": False,
    "log_passrate": False,
    "log_reward_category": None,
    "load_debug_rollout_data": None,
    "rollout_num_gpus": 0,
    "use_wandb": False,
}


@functools.cache
def vime_defaults() -> dict[str, Any]:
    """Every vime flag's default, from vime's own parser groups (without the vLLM layer, which
    would import vLLM); empty when this checkout's parser cannot be built."""
    try:
        from vime.utils.arguments import VIME_GROUPS, add_train_backend_arguments
    except ImportError:
        return {}
    parser = argparse.ArgumentParser(allow_abbrev=False)
    add_train_backend_arguments(parser)
    for add_group in VIME_GROUPS:
        add_group(parser)
    return vars(parser.parse_args([]))


class ContractArgs(SimpleNamespace):
    """The args a hook receives: the contract's settings, and for any other vime flag its default
    (looked up only when a plugin reads one, so most contract runs never build the parser)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        defaults = vime_defaults()
        if name in defaults:
            return defaults[name]
        raise AttributeError(f"args has no attribute {name!r}: it is not one of vime's flags")


def contract_args() -> dict[str, Any]:
    """``VIME_CONTRACT_ARGS`` (``--args`` to run_contract): a JSON object of the flags the plugin's
    launch script sets (``{"rollout_max_context_len": 1024}``), given to every hook under test."""
    raw = os.environ.get("VIME_CONTRACT_ARGS") or "{}"
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise ContractViolation(f"VIME_CONTRACT_ARGS must be a JSON object of flag values, got {raw!r}")
    return value


def make_args(**overrides: Any) -> ContractArgs:
    """The args a hook receives in a contract run: the contract's settings, then the plugin's
    (``VIME_CONTRACT_ARGS``), then what the contract test exercises."""
    base = {**CONTRACT_ARGS, "reward_key": contract_reward_key(), "group_rm": contract_group_rm()}
    return ContractArgs(**{**base, **contract_args(), **overrides})


def contract_prompt(default: Any) -> Any:
    """``VIME_CONTRACT_PROMPT`` (``--prompt`` to run_contract): the prompt shape the plugin's data
    has, as JSON: a string, or a list of chat messages (``[{"role": "user", "content": ...}]``)."""
    raw = os.environ.get("VIME_CONTRACT_PROMPT")
    return json.loads(raw) if raw else default


def contract_label(default: Any) -> Any:
    """``VIME_CONTRACT_LABEL`` (``--label``): the label shape the plugin's data has, as JSON."""
    raw = os.environ.get("VIME_CONTRACT_LABEL")
    return json.loads(raw) if raw else default


# ----- signatures ------------------------------------------------------------------------------
def check_callable_as(fn: Any, path: str, hook: str, call: str, *args: Any, **kwargs: Any) -> None:
    """Fail unless ``fn`` accepts exactly the call vime makes (``call`` spells it for the message)."""
    if not callable(fn):
        raise ContractViolation(
            f"{hook} {path} is a {type(fn).__name__}, not a callable; the contract is {call}"
        )
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as exc:
        raise ContractViolation(
            f"{hook} {path} has signature {describe_signature(fn)} but vime calls it as {call} ({exc})"
        ) from None
    except ValueError:  # builtins without a signature: trust them
        return


def check_is_async(fn: Any, path: str, hook: str, call: str) -> None:
    call_method = type(fn).__call__ if not inspect.isfunction(fn) else None
    if not inspect.iscoroutinefunction(fn) and not inspect.iscoroutinefunction(call_method):
        raise ContractViolation(
            f"{hook} {path} must be 'async def' (vime awaits {call}); it is a plain function"
        )


def describe_signature(fn: Any) -> str:
    try:
        return f"{getattr(fn, '__name__', 'fn')}{inspect.signature(fn)}"
    except (TypeError, ValueError):
        return repr(fn)


def call_hook(fn: Callable[..., Any], what: str, *args: Any, **kwargs: Any) -> Any:
    """Call a plugin (awaiting it if async); an exception inside it becomes a named violation."""
    try:
        return run_async(fn(*args, **kwargs))
    except ContractViolation:
        raise
    except Exception as exc:
        raise ContractViolation(f"{what} raised {type(exc).__name__}: {_short(str(exc))}") from exc


def run_async(value: Any) -> Any:
    """Await a hook result if it is awaitable, as vime's loop does."""
    if inspect.isawaitable(value):
        return asyncio.run(_await(value))
    return value


async def _await(value: Any) -> Any:
    from vime.utils.http_utils import close_session

    try:
        return await value
    finally:
        await close_session()  # this loop ends here: its HTTP session must not outlive it unclosed


# ----- samples ---------------------------------------------------------------------------------
def make_sample(
    index: int, *, group_index: int = 0, prompt: str = "What is 1+1?", label: Any = "2"
) -> Sample:
    """A prompt as the data source hands it out: PENDING, no response yet (the prompt and label in
    the plugin's shape when ``VIME_CONTRACT_PROMPT`` / ``VIME_CONTRACT_LABEL`` give it)."""
    return Sample(
        group_index=group_index,
        index=index,
        prompt=contract_prompt(prompt),
        label=contract_label(label),
        metadata={"source": "contract"},
    )


def make_generated_sample(
    index: int,
    *,
    group_index: int = 0,
    response: str = "The answer is \\boxed{2}.",
    reward: float | dict | None = 1.0,
    status: Sample.Status = Sample.Status.COMPLETED,
    response_length: int = 3,
    prompt_length: int = 4,
) -> Sample:
    """A sample as it leaves generation and reward: tokens, log probs and status filled in."""
    sample = make_sample(index, group_index=group_index)
    sample.tokens = list(range(100, 100 + prompt_length)) + list(range(500, 500 + response_length))
    sample.response = response
    sample.response_length = response_length
    sample.rollout_log_probs = [-0.5] * response_length
    sample.reward = reward
    sample.status = status
    return sample


def make_groups(
    n_groups: int, n_per_group: int, rewards: list[list[float]] | None = None
) -> list[list[Sample]]:
    groups = []
    for g in range(n_groups):
        group = []
        for k in range(n_per_group):
            reward = rewards[g][k] if rewards else float(k % 2)
            group.append(make_generated_sample(g * n_per_group + k, group_index=g, reward=reward))
        groups.append(group)
    return groups


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def reward_mismatch(reward: Any, reward_key: str | None) -> str | None:
    """Why ``reward`` is not what training can use, or None.

    Training reads ``sample.get_reward_value(args)``: a finite number, or with ``--reward-key``
    set a dict holding that key (whose value is a finite number). A reward of 0 is a reward.
    """
    if reward is None:
        return "reward is None (a reward of 0 is fine; None means never scored)"
    if reward_key is None:
        if isinstance(reward, dict):
            return f"reward is a dict {_short(reward)} but --reward-key is not set: a reward must be a number"
        if not _is_number(reward):
            return f"reward must be a finite number, got {_short(reward)} ({type(reward).__name__})"
        return None
    if not isinstance(reward, dict) or reward_key not in reward:
        return (
            f"--reward-key is {reward_key!r}, so a reward must be a dict with that key; got {_short(reward)}"
        )
    if not _is_number(reward[reward_key]):
        return f"reward[{reward_key!r}] must be a finite number, got {_short(reward[reward_key])}"
    return None


def contract_group_rm() -> bool:
    """``--group-rm`` given to run_contract: the reward plugin scores a whole group at once."""
    return os.environ.get("VIME_CONTRACT_GROUP_RM") == "1"


def contract_reward_key() -> str | None:
    """``--reward-key`` given to run_contract (a plugin whose rewards are dicts)."""
    return os.environ.get("VIME_CONTRACT_REWARD_KEY") or None


def sample_mismatches(sample: Any, *, generated: bool = True, reward_key: str | None = None) -> list[str]:
    """Every way ``sample`` breaks the Sample contract (empty list = fine)."""
    if not isinstance(sample, Sample):
        return [f"expected vime.utils.types.Sample, got {type(sample).__module__}.{type(sample).__name__}"]
    problems = []
    if not isinstance(sample.tokens, list) or not all(
        isinstance(t, int) and not isinstance(t, bool) for t in sample.tokens
    ):
        problems.append(f"tokens must be a list[int], got {_short(sample.tokens)}")
    if not isinstance(sample.response, str):
        problems.append(f"response must be str, got {type(sample.response).__name__}")
    if not isinstance(sample.response_length, int) or isinstance(sample.response_length, bool):
        problems.append(f"response_length must be int, got {type(sample.response_length).__name__}")
    elif isinstance(sample.tokens, list) and not 0 <= sample.response_length <= len(sample.tokens):
        problems.append(
            f"response_length {sample.response_length} is outside 0..len(tokens)={len(sample.tokens)}"
        )
    if not isinstance(sample.status, Sample.Status):
        problems.append(f"status must be a Sample.Status, got {sample.status!r}")
    if sample.label is not None and not isinstance(sample.label, str | dict):
        problems.append(f"label must be str, dict or None, got {type(sample.label).__name__}")
    if not isinstance(sample.metadata, dict):
        problems.append(f"metadata must be a dict, got {type(sample.metadata).__name__}")
    if sample.multimodal_inputs is not None and not isinstance(sample.multimodal_inputs, dict):
        problems.append(
            f"multimodal_inputs must be a dict or None, got {type(sample.multimodal_inputs).__name__}"
        )
    if not isinstance(sample.weight_versions, list) or not all(
        isinstance(v, str) for v in sample.weight_versions
    ):
        problems.append(f"weight_versions must be a list[str], got {_short(sample.weight_versions)}")
    for name in ("loss_mask", "rollout_log_probs"):
        values = getattr(sample, name)
        if values is None:
            continue
        if not isinstance(values, list):
            problems.append(f"{name} must be a list or None, got {type(values).__name__}")
        elif len(values) != sample.response_length:
            problems.append(
                f"{name} has {len(values)} entries but response_length is {sample.response_length}"
            )
    if (
        sample.loss_mask is not None
        and isinstance(sample.loss_mask, list)
        and any(m not in (0, 1) for m in sample.loss_mask)
    ):
        problems.append("loss_mask entries must be 0 or 1")
    if generated:
        if sample.status == Sample.Status.PENDING:
            problems.append(
                "status is still PENDING after generation (set COMPLETED/TRUNCATED/ABORTED/FAILED)"
            )
        problem = reward_mismatch(sample.reward, reward_key)
        if problem:
            problems.append(problem)
    return problems


def check_sample(sample: Any, where: str, *, generated: bool = True, reward_key: str | None = None) -> None:
    problems = sample_mismatches(sample, generated=generated, reward_key=reward_key)
    if problems:
        raise ContractViolation(f"{where}: " + "; ".join(problems))


def check_train_output(
    output: Any, path: str, *, n_samples_per_prompt: int, n_groups: int, reward_key: str | None = None
) -> None:
    """Groups of exactly ``n_samples_per_prompt`` valid samples, ``n_groups`` of them."""
    hook = f"rollout function {path}"
    if not isinstance(output, RolloutFnTrainOutput):
        raise ContractViolation(
            f"{hook} returned {type(output).__name__} for training; expected RolloutFnTrainOutput"
        )
    groups = output.samples
    if not isinstance(groups, list) or not all(isinstance(g, list) for g in groups):
        raise ContractViolation(
            f"{hook}: RolloutFnTrainOutput.samples must be list[list[Sample]] (groups of samples)"
        )
    if len(groups) != n_groups:
        raise ContractViolation(
            f"{hook} returned {len(groups)} groups; expected rollout_batch_size={n_groups}"
        )
    for g, group in enumerate(groups):
        if len(group) != n_samples_per_prompt:
            raise ContractViolation(
                f"{hook}: group {g} has {len(group)} samples; expected n_samples_per_prompt={n_samples_per_prompt}"
            )
        for k, sample in enumerate(group):
            check_sample(sample, f"{hook}: group {g} sample {k}", reward_key=reward_key)
    if output.metrics is not None and not isinstance(output.metrics, dict):
        raise ContractViolation(
            f"{hook}: metrics must be a dict or None, got {type(output.metrics).__name__}"
        )


def check_eval_output(output: Any, path: str, *, reward_key: str | None = None) -> None:
    """``data[name] = {rewards, truncated, samples}`` with equal lengths and valid samples."""
    hook = f"eval function {path}"
    if not isinstance(output, RolloutFnEvalOutput):
        raise ContractViolation(
            f"{hook} returned {type(output).__name__} for evaluation; expected RolloutFnEvalOutput"
        )
    if not isinstance(output.data, dict) or not output.data:
        raise ContractViolation(
            f"{hook}: RolloutFnEvalOutput.data must be a non-empty dict of dataset name -> results"
        )
    for name, result in output.data.items():
        missing = {"rewards", "truncated", "samples"} - set(result)
        if missing:
            raise ContractViolation(f"{hook}: dataset {name!r} lacks {sorted(missing)}")
        lengths = {key: len(result[key]) for key in ("rewards", "truncated", "samples")}
        if len(set(lengths.values())) != 1:
            raise ContractViolation(f"{hook}: dataset {name!r} has lists of different lengths {lengths}")
        for i, reward in enumerate(result["rewards"]):
            if not _is_number(reward):
                raise ContractViolation(
                    f"{hook}: dataset {name!r} rewards[{i}] = {reward!r} is not a finite number"
                )
        for i, flag in enumerate(result["truncated"]):
            if not isinstance(flag, bool | int) or flag not in (0, 1):
                raise ContractViolation(f"{hook}: dataset {name!r} truncated[{i}] = {flag!r} is not a bool")
        for i, sample in enumerate(result["samples"]):
            check_sample(sample, f"{hook}: dataset {name!r} sample {i}", reward_key=reward_key)
            truncated = sample.status == Sample.Status.TRUNCATED
            if bool(result["truncated"][i]) != truncated:
                raise ContractViolation(
                    f"{hook}: dataset {name!r} truncated[{i}]={result['truncated'][i]!r} disagrees with "
                    f"sample status {sample.status.name}"
                )


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ----- running a contract file directly --------------------------------------------------------
def run_this_file(file: str) -> None:
    """``python tests/contract/test_X.py --xxx-path P`` == ``vime-contract test_X.py --xxx-path P``."""
    from vime.contract_runner import main

    sys.exit(main([file, *sys.argv[1:]]))
