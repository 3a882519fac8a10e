"""Every vime flag's default, read from the parser itself, and typed views of ``args`` built on it.

Code that receives an ``args`` object not made by the full parser (a test's SimpleNamespace, a
plugin's own namespace) used to write ``getattr(args, "x", default)``, restating each default a
second time. :func:`flag_value` takes a missing flag's default from vime's own argument groups
instead, so there is one definition; a name that is no vime flag is an error, not a silent None.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any, TypeVar

T = TypeVar("T")


@functools.cache
def flag_defaults() -> dict[str, Any]:
    """Defaults of the training-backend flags and of vime's own groups (no vLLM import)."""
    from vime.utils.args import VIME_GROUPS, add_train_backend_arguments

    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    add_train_backend_arguments(parser)
    for add_group in VIME_GROUPS:
        add_group(parser)
    return vars(parser.parse_args([]))


def flag_value(args: Any, name: str) -> Any:
    """``args.<name>``, or the parser's default when ``args`` lacks it."""
    if hasattr(args, name):
        return getattr(args, name)
    defaults = flag_defaults()
    if name not in defaults:
        raise AttributeError(f"{name!r} is not a vime flag (no --{name.replace('_', '-')} in the parser)")
    return defaults[name]


def config_from_args(
    cls: type[T],
    args: Any,
    *,
    dests: Mapping[str, str | tuple[str, Callable[[Any], Any]]] | None = None,
    **given: Any,
) -> T:
    """A dataclass filled from ``args`` (defaults from the parser).

    Each field comes from the flag of its own name, or from ``dests[field]``: another flag's dest,
    or ``(dest, convert)`` for a field derived from one flag. Fields in ``given`` are taken as they are.
    """
    values: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        if not f.init:
            continue
        if f.name in given:
            values[f.name] = given[f.name]
            continue
        source = (dests or {}).get(f.name, f.name)
        dest, convert = (source, None) if isinstance(source, str) else source
        value = flag_value(args, dest)
        values[f.name] = convert(value) if convert is not None else value
    return cls(**values)
