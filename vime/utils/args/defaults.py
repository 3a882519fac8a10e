"""Every vime flag's default, read from the parser itself, and typed views of ``args`` built on it.

Code that receives an ``args`` object not made by the full parser (a test's SimpleNamespace, a
plugin's own namespace) used to write ``getattr(args, "x", default)``, restating each default a
second time. :func:`flag_value` takes a missing flag's default from vime's own argument groups
instead, so there is one definition; a name that is no vime flag is an error, not a silent None.
"""

from __future__ import annotations

import argparse
import functools
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


def config_from_args(cls: type[T], args: Any) -> T:
    """A dataclass whose field names are flag dests, filled from ``args`` (defaults from the parser)."""
    return cls(**{f.name: flag_value(args, f.name) for f in fields(cls)})  # type: ignore[arg-type]
