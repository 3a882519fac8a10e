"""``--vllm-*`` flags in launch scripts must exist: in vLLM's own ``vllm serve`` parser, or as one
of vime's own engine flags (``--vllm-router-port`` ...) defined in the worktree's Python code."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

from sync.gate.files import read_text
from sync.gate.result import FilePRs, GateFailure

_FLAG = re.compile(r"(?<![\w-])--vllm-([a-z0-9][a-z0-9-]*)")
_COMMENT = re.compile(r"(^|\s)#.*$")
_DEFINITION_KEYWORDS = {"type", "default", "help", "action", "dest", "choices", "nargs", "const", "required"}


class VllmNotInstalled(RuntimeError):
    """vLLM cannot be imported here, so its parser cannot be built."""


def _installed_vllm() -> tuple[str, Path]:
    """(distribution name==version, package directory) of the vLLM this interpreter imports."""
    spec = importlib.util.find_spec("vllm")
    if spec is None or spec.origin is None:
        raise VllmNotInstalled("No module named 'vllm'")
    names = importlib.metadata.packages_distributions().get("vllm") or ["vllm"]
    try:
        version = importlib.metadata.version(names[0])
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return f"{names[0]}=={version}", Path(spec.origin).parent


def _cache_file(key: str, package: Path) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vime-sync"
    stamp = int((package / "entrypoints").stat().st_mtime) if (package / "entrypoints").exists() else 0
    return base / f"vllm-serve-options-{key.replace('==', '-')}-{stamp}.json"


@functools.lru_cache(maxsize=1)
def vllm_server_options() -> frozenset[str]:
    """The installed vLLM's ``vllm serve`` options, cached on disk per vLLM version (building the
    parser imports vLLM: 9-20 s here, most of a gate run on a small branch)."""
    key, package = _installed_vllm()
    cache = _cache_file(key, package)
    try:
        return frozenset(json.loads(cache.read_text(encoding="utf-8"))["options"])
    except (OSError, ValueError, KeyError):
        pass
    options = build_vllm_server_options()
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        scratch = cache.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(json.dumps({"vllm": key, "options": sorted(options)}), encoding="utf-8")
        os.replace(scratch, cache)
    except OSError:  # a read-only home: no cache, same answer
        pass
    return options


def build_vllm_server_options() -> frozenset[str]:
    """Every option string of the installed vLLM's ``vllm serve`` parser (built by vLLM itself)."""
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser

        try:
            from vllm.entrypoints.launchers.cli_args import make_arg_parser
        except ImportError:  # older vLLM releases keep it here
            from vllm.entrypoints.openai.cli_args import make_arg_parser
        parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve", add_help=False))
    except ImportError as exc:
        raise VllmNotInstalled(str(exc)) from None
    except Exception as exc:  # installed but broken (e.g. a RuntimeError at import): skip the check, say why
        raise VllmNotInstalled(f"vLLM fails to import: {type(exc).__name__}: {exc}") from None
    return frozenset(option for action in parser._actions for option in action.option_strings)


def own_vllm_flags(trees: dict[str, ast.Module]) -> set[str]:
    """``--vllm-*`` flags that vime defines itself: string arguments of argument definitions."""
    flags = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not {k.arg for k in node.keywords} & _DEFINITION_KEYWORDS:
                continue
            for arg in node.args:
                if (
                    isinstance(arg, ast.Constant)
                    and isinstance(arg.value, str)
                    and _FLAG.fullmatch(arg.value)
                ):
                    flags.add(arg.value)
    return flags


def installed_vime_flags(root: Path) -> set[str]:
    """vime's own ``--vllm-*`` flags as defined by the installation at ``root`` (for a worktree
    that carries plugins but not the framework)."""
    trees = {}
    for path in sorted((root / "vime").rglob("*.py")):
        try:
            trees[path.as_posix()] = ast.parse(path.read_bytes())
        except SyntaxError:
            continue
    return own_vllm_flags(trees)


def script_flags(text: str) -> list[tuple[str, int]]:
    """``(flag, line)`` for every ``--vllm-*`` token in a shell script (comments skipped)."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        code = _COMMENT.sub("", line)
        found += [(f"--vllm-{m.group(1)}", number) for m in _FLAG.finditer(code)]
    return found


def check_vllm_flags(
    worktree: Path,
    scripts: Iterable[str],
    own_flags: set[str],
    file_prs: FilePRs,
    server_options: frozenset[str],
) -> list[GateFailure]:
    failures = []
    for rel in scripts:
        text = read_text(worktree / rel)
        if text is None:
            continue
        for flag, line in script_flags(text):
            name = flag[len("--vllm-") :]
            if flag in own_flags or f"--{name}" in server_options:
                continue
            failures.append(
                GateFailure.about(
                    "vllm-flag",
                    f"{rel}:{line} passes {flag}, but the installed vLLM has no --{name} "
                    f"and vime defines no {flag}; map it in translations/ or drop it",
                    [rel],
                    file_prs,
                    line=line,
                )
            )
    return failures
