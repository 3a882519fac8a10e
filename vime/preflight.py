"""Checks that run before Ray, engines or trainers start, so a bad run fails in seconds with one line.

What a run would otherwise find after a minute of start-up, under a Ray traceback: prompt files
that are missing or malformed, hooks (``--*-path``) that do not import or do not take the call
vime makes, a custom reward that raises or returns no number, path templates without
``{rollout_id}``, pass-through ``--vllm-*`` flags that break the server vime manages. Each
problem is a :class:`PreflightError` whose message is one line naming the flag and the fix.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import os
from argparse import Namespace
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vime.rollout.rollout_config import RolloutConfig
from vime.utils.args.defaults import config_from_args
from vime.utils.misc import HookLoadError, load_function, maybe_await

# slime calls a TIS hook with these keywords (megatron_utils/loss.py), and so does vime
TIS_KEYWORDS = (
    "pg_loss",
    "train_log_probs",
    "rollout_log_probs",
    "loss_masks",
    "total_lengths",
    "response_lengths",
)


class PreflightError(ValueError):
    """A run that cannot work; the message is one line naming the flag and the fix."""


# flag -> the call vime makes (positional arguments and, for hooks called with keywords, their names:
# for a signature check); None: import only
HOOK_CALLS: dict[str, tuple[str, int] | tuple[str, int, tuple[str, ...]] | None] = {
    "custom_rm_path": ("fn(args, sample)", 2),
    "rollout_function_path": ("fn(args, rollout_id, data_source, evaluation=False)", 3),
    "eval_function_path": ("fn(args, rollout_id, data_source, evaluation=True)", 3),
    "custom_generate_function_path": ("fn(args, sample, sampling_params)", 3),
    "buffer_filter_path": ("fn(args, rollout_id, buffer, num_samples)", 4),
    "dynamic_sampling_filter_path": ("fn(args, samples)", 2),
    "rollout_sample_filter_path": ("fn(args, groups)", 2),
    "custom_reward_post_process_path": ("fn(args, samples)", 2),
    "custom_convert_samples_to_train_data_path": ("fn(args, samples)", 2),
    "rollout_data_postprocess_path": ("fn(args, rollout_id, rollout_data)", 3),
    "custom_rollout_log_function_path": ("fn(rollout_id, args, samples, extra_metrics, rollout_time)", 5),
    "custom_eval_rollout_log_function_path": ("fn(rollout_id, args, data, extra_metrics)", 4),
    "data_source_path": ("cls(args)", 1),
    "custom_loss_function_path": ("fn(args, batch, logits, sum_of_sample_mean)", 4),
    "custom_advantage_function_path": ("fn(args, rollout_data)", 2),
    "custom_tis_function_path": (
        "fn(args, *, pg_loss, train_log_probs, rollout_log_probs, loss_masks, total_lengths, response_lengths)",
        1,
        TIS_KEYWORDS,
    ),
    "custom_pg_loss_reducer_function_path": (
        "fn(total_lengths, response_lengths, loss_masks, calculate_per_token_loss)",
        4,
    ),
    "rollout_all_samples_process_path": None,
}

PATH_FLAGS = ("prompt_data", "hf_checkpoint", "ref_load", "load", "save", "run_dir", "metrics_jsonl",
              "save_debug_rollout_data", "load_debug_rollout_data", "save_debug_train_data", "dump_details",
              "update_weight_disk_dir", "wandb_dir",
              "vllm_log_dir")  # fmt: skip

REWARD_PROBE_TIMEOUT_S = 10.0


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def absolute_paths(args: Namespace) -> None:
    """Make path arguments absolute: Ray workers do not run in the user's working directory."""
    for dest in PATH_FLAGS:
        value = getattr(args, dest, None)  # not every launcher defines every path flag
        if isinstance(value, str) and value and "://" not in value:
            setattr(args, dest, os.path.abspath(os.path.expanduser(value)))
    pairs = args.eval_prompt_data
    if pairs:
        args.eval_prompt_data = [p if i % 2 == 0 else os.path.abspath(p) for i, p in enumerate(pairs)]


def _prompt_files(args: Namespace) -> list[tuple[str, str, tuple[tuple[str | None, str], ...]]]:
    """(what names the file, its path, (key, what sets it) pairs) of the train and every eval dataset."""
    from vime.utils.eval_config import resolve_eval_datasets

    files = []
    if args.prompt_data:
        files.append(
            (
                "--prompt-data",
                args.prompt_data,
                ((args.input_key, "--input-key"), (args.label_key, "--label-key")),
            )
        )
    datasets = args.eval_datasets if args.eval_datasets is not None else resolve_eval_datasets(args)
    for d in datasets:
        if args.eval_config:
            where, keys = (
                f"--eval-config dataset {d.name}",
                ((d.input_key, "its input_key"), (d.label_key, "its label_key")),
            )
        else:
            where, keys = (
                f"--eval-prompt-data {d.name}",
                ((d.input_key, "--eval-input-key"), (d.label_key, "--eval-label-key")),
            )
        files.append((where, d.path, keys))
    return files


def check_prompt_files(args: Namespace) -> list[dict]:
    """Read --prompt-data and each eval dataset's file; every row needs its input (and label) key."""
    from vime.rollout.prompt_dataset import PromptDataError, read_rows

    first_rows: list[dict] = []
    for flag, spec, keys in _prompt_files(args):
        try:
            rows = read_rows(spec)
        except PromptDataError as exc:
            raise PreflightError(f"{flag}: {exc}") from None
        if not rows:
            raise PreflightError(f"{flag} {spec} holds no rows: give a file with at least one prompt")
        for key, key_flag in keys:
            if key is None:
                continue
            for number, row in enumerate(rows):
                if key not in row:
                    raise PreflightError(
                        f"{flag} {spec} row {number} has no key {key!r} (keys: {sorted(row)}): "
                        f"set {key_flag} to one of them"
                    )
        first_rows.append(rows[0])
    return first_rows


@dataclass(frozen=True)
class PathTemplates:
    """The per-step path templates preflight checks before anything starts."""

    save_debug_rollout_data: str | None = None
    load_debug_rollout_data: str | None = None
    save_debug_train_data: str | None = None
    save_hf: str | None = None

    @classmethod
    def from_args(cls, args: Any) -> PathTemplates:
        return config_from_args(cls, args)


def _vllm_flag(args: Namespace, dest: str) -> Any:
    """A vLLM pass-through flag: vime's parser mirrors vLLM's own at run time, so a namespace built
    without vLLM's parser (a test's, a launcher's) lacks it, and vime keeps no default for it."""
    return getattr(args, dest, None)  # not flag_value: not a vime flag (see the docstring)


def check_templates(args: Namespace) -> None:
    templates = PathTemplates.from_args(args)
    for dest in ("save_debug_rollout_data", "load_debug_rollout_data", "save_debug_train_data"):
        template = getattr(templates, dest)
        if template and "{rollout_id}" not in template:
            raise PreflightError(
                f"{_flag(dest)} {template} has no {{rollout_id}}: every step would use the same file; "
                f"write e.g. {Path(template).parent / 'rollout_{rollout_id}.pkl'}"
            )
    save_hf = templates.save_hf
    if save_hf:
        from vime.utils.hf_copy import template_error

        error = template_error(save_hf)
        if error:
            raise PreflightError(error)
    if args.load_debug_rollout_data:
        first = args.load_debug_rollout_data.format(rollout_id=args.start_rollout_id or 0)
        if not Path(first).is_file():
            raise PreflightError(
                f"--load-debug-rollout-data: {first} (step {args.start_rollout_id or 0}) does not exist: "
                f"write it first with --debug-rollout-only --save-debug-rollout-data"
            )


def _accepts(fn: Any, positional: int, keywords: tuple[str, ...] = ()) -> bool:
    try:
        inspect.signature(fn).bind(*([None] * positional), **dict.fromkeys(keywords))
    except TypeError:
        return False
    except ValueError:  # no signature to read (a builtin): trust it
        return True
    return True


def check_hooks(args: Namespace) -> dict[str, Callable[..., Any]]:
    """Import every ``--*-path`` hook as the Ray workers will, and check it takes vime's call."""
    loaded = {}
    for dest, call in HOOK_CALLS.items():
        path = getattr(args, dest, None)  # a launcher's own parser may lack some hook flags
        if not path:
            continue
        try:
            fn = load_function(path)
        except HookLoadError as exc:
            raise PreflightError(f"{_flag(dest)}: {exc}") from None
        if call is not None:
            spelled, positional, *named = call
            keywords = named[0] if named else ()
            if not callable(fn):
                raise PreflightError(
                    f"{_flag(dest)} {path} is a {type(fn).__name__}, not callable: vime calls {spelled}"
                )
            if not _accepts(fn, positional, keywords):
                raise PreflightError(
                    f"{_flag(dest)} {path} has signature {getattr(fn, '__name__', 'fn')}{inspect.signature(fn)} "
                    f"but vime calls {spelled}: change its parameters"
                )
        loaded[dest] = fn
    for path in RolloutConfig.from_args(args).rollout_sample_hook_path:  # repeatable: one per hook
        try:
            fn = load_function(path)
        except HookLoadError as exc:
            raise PreflightError(f"--rollout-sample-hook-path: {exc}") from None
        if not callable(fn) or not _accepts(fn, 2, ("rollout_id", "evaluation")):
            raise PreflightError(
                f"--rollout-sample-hook-path {path}: vime calls hook(args, sample, *, rollout_id, evaluation)"
            )
    return loaded


def _reward_problem(value: Any, args: Namespace) -> str | None:
    if args.group_rm:
        if not isinstance(value, list | tuple):
            return f"returned {type(value).__name__} for a group; expected a list with one reward per sample"
        value = value[0] if value else 0.0
    if isinstance(value, dict) and args.reward_key:
        value = value.get(args.reward_key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"returned {type(value).__name__} {value!r:.40}; expected a number"
    if not math.isfinite(value):
        return f"returned {value}; expected a finite number"
    return None


def _tokenize_probe(args: Namespace, sample: Any) -> None:
    """Give the probe's sample the token ids and response length a generated one has (a reward that
    scores tokens, e.g. on-policy distillation's teacher, needs them), with the served tokenizer."""
    if not args.hf_checkpoint:
        return
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(args.hf_checkpoint, local_files_only=True)
    except (OSError, ValueError):
        return  # no tokenizer to read here: the reward sees text only, as before
    prompt_ids = list(tokenizer(sample.prompt, add_special_tokens=False)["input_ids"])
    response_ids = list(tokenizer(sample.response, add_special_tokens=False)["input_ids"])
    sample.tokens = prompt_ids + response_ids
    sample.response_length = len(response_ids)


def probe_reward(args: Namespace, fn: Callable[..., Any], row: dict) -> None:
    """Score one made-up answer to the first prompt: a reward that raises or returns no number fails here."""
    from vime.utils.types import Sample

    label = row.get(args.label_key) if args.label_key else None
    sample = Sample(prompt=str(row.get(args.input_key)), label=label, response=f"\\boxed{{{label}}}", index=0)
    sample.status = Sample.Status.COMPLETED
    _tokenize_probe(args, sample)
    payload = [sample] if args.group_rm else sample

    async def scored() -> Any:
        from vime.utils.http_utils import close_session

        try:
            return await maybe_await(fn(args, payload))
        finally:
            await close_session()  # the probe's loop ends with this call

    def score() -> Any:
        return asyncio.run(scored())

    pool = ThreadPoolExecutor(1)
    try:
        value = pool.submit(score).result(timeout=REWARD_PROBE_TIMEOUT_S)
    except FutureTimeout:
        return  # a slow (remote) reward: training will tell
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise PreflightError(
            f"--custom-rm-path {args.custom_rm_path} raised {type(exc).__name__}: {first} on a test answer "
            f"to the first prompt; check it with tools/run_contract.py tests/contract/test_reward_contract.py"
        ) from None
    finally:
        pool.shutdown(wait=False)
    problem = _reward_problem(value, args)
    if problem:
        raise PreflightError(
            f"--custom-rm-path {args.custom_rm_path} {problem} on a test answer to the first prompt"
        )


def check_engine_flags(args: Namespace) -> None:
    """Refuse pass-through flags that break the server vime starts and controls over HTTP."""
    refused = {
        "vllm_uds": "--vllm-uds makes vllm serve listen on a unix socket; vime and the router talk HTTP on a port",
        "vllm_grpc": "--vllm-grpc replaces the HTTP API vime drives (generate, pause, weight reload)",
    }
    for dest, why in refused.items():
        if _vllm_flag(args, dest):
            raise PreflightError(f"{why}: drop it")
    if _vllm_flag(args, "vllm_enable_scale_out") is False:
        raise PreflightError(
            "--no-vllm-enable-scale-out: vime adds and removes engines behind the router (fault tolerance); drop it"
        )
    tp = _vllm_flag(args, "vllm_tensor_parallel_size")
    if tp is None:
        return
    if args.rollout_num_gpus == 0 and tp != 1:
        raise PreflightError(
            f"--vllm-tensor-parallel-size {tp}: the engines run on the CPU (--rollout-num-gpus 0), one process "
            f"each: drop the flag"
        )
    if args.rollout_num_gpus > 0 and tp != args.rollout_num_gpus_per_engine:
        raise PreflightError(
            f"--vllm-tensor-parallel-size {tp} conflicts with --rollout-num-gpus-per-engine "
            f"{args.rollout_num_gpus_per_engine} (the GPUs each engine gets): make them equal"
        )


def preflight(args: Namespace) -> None:
    """Every check, cheapest first; raises :class:`PreflightError` at the first problem."""
    absolute_paths(args)
    check_templates(args)
    if not args.debug_train_only:
        check_engine_flags(args)
    rows = check_prompt_files(args) if not args.load_debug_rollout_data else []
    hooks = check_hooks(args)
    if "custom_rm_path" in hooks and rows:
        probe_reward(args, hooks["custom_rm_path"], rows[0])
