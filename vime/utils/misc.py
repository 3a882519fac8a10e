"""Small shared helpers: loading customization hooks by dotted path."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any


class HookLoadError(ImportError):
    """A ``--xxx-path`` value that does not name an importable attribute; the message is one line."""


def load_function(path: str) -> Callable[..., Any]:
    """Import ``"package.module.attr"`` and return ``attr``.

    Every failure is one line naming the path, the module and the attribute, so that a typo in
    ``--custom-rm-path`` reads as such instead of a traceback from deep inside importlib.
    """
    if not isinstance(path, str) or "." not in path.strip(".") or not path.strip():
        raise HookLoadError(f"hook path {path!r} is not a dotted path: expected 'package.module.function'")
    module_name, _, attr = path.strip().rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise HookLoadError(
            f"cannot load {path!r}: module {module_name!r} not found ({exc}); "
            f"check the path and that its package is on PYTHONPATH"
        ) from exc
    except Exception as exc:  # the module exists but fails while importing
        first_line = str(exc).splitlines()[0] if str(exc) else ""
        raise HookLoadError(
            f"cannot load {path!r}: importing module {module_name!r} raised {type(exc).__name__}: {first_line}"
        ) from exc
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise HookLoadError(
            f"cannot load {path!r}: module {module_name!r} has no attribute {attr!r}"
        ) from exc


async def maybe_await(value: Any) -> Any:
    """Await ``value`` if it is awaitable: hooks may be written sync or async."""
    if inspect.isawaitable(value):
        return await value
    return value
