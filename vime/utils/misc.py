"""Small shared helpers: loading customization hooks by dotted path, and the slime helpers
plugins import from ``slime.utils.misc`` (``SingletonMeta``, ``exec_command``)."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar


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
        if _is_module_or_parent(exc.name, module_name):
            raise HookLoadError(
                f"cannot load {path!r}: module {module_name!r} not found ({exc}); "
                f"check the path and that its package is on PYTHONPATH"
            ) from exc
        raise HookLoadError(f"cannot load {path!r}: {_failed_import(exc, module_name)}") from exc
    except Exception as exc:  # the module exists but fails while importing
        raise HookLoadError(f"cannot load {path!r}: {_failed_import(exc, module_name)}") from exc
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise HookLoadError(
            f"cannot load {path!r}: module {module_name!r} has no attribute {attr!r}"
        ) from exc


def _is_module_or_parent(missing: str | None, module_name: str) -> bool:
    """Is the module that was not found the hook's own module (or a package above it)?"""
    return missing is None or module_name == missing or module_name.startswith(missing + ".")


def _failed_import(exc: BaseException, module_name: str) -> str:
    """Where importing ``module_name`` failed: the line of the hook's own module that raised (the
    import it runs), else the deepest line outside importlib, and the error's first line."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<frozen")]
    first_line = str(exc).splitlines()[0] if str(exc) else ""
    error = f"{type(exc).__name__}: {first_line}"
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        error = f"{type(exc).__name__}: no module named {exc.name!r}"
    own = module_name.replace(".", "/")
    mine = [f for f in frames if f.filename.endswith((f"{own}.py", f"{own}/__init__.py"))]
    frame = mine[-1] if mine else (frames[-1] if frames else None)
    if frame is None:
        return f"importing module {module_name!r} raised {error}"
    where = f"{Path(frame.filename).name}:{frame.lineno}"
    code = f" `{frame.line.strip()}`" if frame.line else ""
    whose = f"module {module_name!r} exists, but" if mine else f"importing module {module_name!r}:"
    return f"{whose} {where}{code} raised {error}"


async def maybe_await(value: Any) -> Any:
    """Await ``value`` if it is awaitable: hooks may be written sync or async."""
    if inspect.isawaitable(value):
        return await value
    return value


class SingletonMeta(type):
    """A metaclass whose classes have one instance (slime's): the first call's arguments build it,
    later calls return it; ``clear_instances()`` forgets them all (tests)."""

    _instances: ClassVar[dict[type, object]] = {}

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls not in cls._instances:
            cls._instances[cls] = super().__call__(*args, **kwargs)
        return cls._instances[cls]

    def clear_instances(cls) -> None:
        SingletonMeta._instances = {}


def exec_command(cmd: str, capture_output: bool = False) -> str | None:
    """Run ``cmd`` with bash, echoing it first (slime's); a failure raises ``CalledProcessError``.
    With ``capture_output`` the command's stdout is returned."""
    print(f"EXEC: {cmd}", flush=True)
    try:
        done = subprocess.run(
            ["bash", "-c", cmd], check=True, capture_output=capture_output, text=capture_output
        )
    except subprocess.CalledProcessError as exc:
        if capture_output:
            print(f"stdout={exc.stdout!r} stderr={exc.stderr!r}", flush=True)
        raise
    return done.stdout if capture_output else None
