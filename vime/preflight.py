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
from pathlib import Path
from typing import Any

from vime.utils.misc import HookLoadError, load_function, maybe_await


class PreflightError(ValueError):
    """A run that cannot work; the message is one line naming the flag and the fix."""


# flag -> the call vime makes (positional arguments, for a signature check); None: import only
HOOK_CALLS: dict[str, tuple[str, int] | None] = {
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
    "custom_loss_function_path": None,
    "rollout_all_samples_process_path": None,
}

PATH_FLAGS = ("prompt_data", "hf_checkpoint", "ref_load", "load", "save", "run_dir", "metrics_jsonl",
              "save_debug_rollout_data", "load_debug_rollout_data", "update_weight_disk_dir", "wandb_dir",
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


def check_prompt_files(args: Namespace) -> list[dict]:
    """Read --prompt-data and each --eval-prompt-data file; every row needs the input (and label) key."""
    from vime.rollout.prompt_dataset import PromptDataError, read_rows

    files = [("--prompt-data", args.prompt_data)] if args.prompt_data else []
    pairs = args.eval_prompt_data or []
    files += [(f"--eval-prompt-data {pairs[i]}", pairs[i + 1]) for i in range(0, len(pairs) - 1, 2)]
    first_rows: list[dict] = []
    for flag, spec in files:
        try:
            rows = read_rows(spec)
        except PromptDataError as exc:
            raise PreflightError(f"{flag}: {exc}") from None
        if not rows:
            raise PreflightError(f"{flag} {spec} holds no rows: give a file with at least one prompt")
        for key, key_flag in ((args.input_key, "--input-key"), (args.label_key, "--label-key")):
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


def check_templates(args: Namespace) -> None:
    for dest in ("save_debug_rollout_data", "load_debug_rollout_data"):
        template = getattr(args, dest)
        if template and "{rollout_id}" not in template:
            raise PreflightError(
                f"{_flag(dest)} {template} has no {{rollout_id}}: every step would use the same file; "
                f"write e.g. {Path(template).parent / 'rollout_{rollout_id}.pkl'}"
            )
    save_hf = getattr(args, "save_hf", None)
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


def _accepts(fn: Any, positional: int) -> bool:
    try:
        inspect.signature(fn).bind(*([None] * positional))
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
            spelled, positional = call
            if not callable(fn):
                raise PreflightError(
                    f"{_flag(dest)} {path} is a {type(fn).__name__}, not callable: vime calls {spelled}"
                )
            if not _accepts(fn, positional):
                raise PreflightError(
                    f"{_flag(dest)} {path} has signature {getattr(fn, '__name__', 'fn')}{inspect.signature(fn)} "
                    f"but vime calls {spelled}: change its parameters"
                )
        loaded[dest] = fn
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


def probe_reward(args: Namespace, fn: Callable[..., Any], row: dict) -> None:
    """Score one made-up answer to the first prompt: a reward that raises or returns no number fails here."""
    from vime.utils.types import Sample

    label = row.get(args.label_key) if args.label_key else None
    sample = Sample(prompt=str(row.get(args.input_key)), label=label, response=f"\\boxed{{{label}}}", index=0)
    sample.status = Sample.Status.COMPLETED
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
        if getattr(args, dest, None):
            raise PreflightError(f"{why}: drop it")
    if getattr(args, "vllm_enable_scale_out", None) is False:
        raise PreflightError(
            "--no-vllm-enable-scale-out: vime adds and removes engines behind the router (fault tolerance); drop it"
        )
    tp = getattr(args, "vllm_tensor_parallel_size", None)
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
