"""One line per user-facing failure, and one exit code per class, for every vime-sync command.

Exit codes: 0 done; 1 refused input or a failed check (the line names the thing and the fix);
2 usage (click's own errors: unknown option, missing value); 3 an internal error (a bug: the line
says so and ``--debug`` shows the traceback); 130 interrupted (Ctrl-C, SIGTERM), after the rollback.
"""

from __future__ import annotations

import errno
import functools
import os
import tomllib
from collections.abc import Callable
from typing import Any, TypeVar

import click
import typer

from sync.gitio import GitError
from sync.model.errors import SyncError

REFUSED = 1
USAGE = 2
INTERNAL = 3
INTERRUPTED = 130
F = TypeVar("F", bound=Callable[..., Any])
_STATE = {"debug": bool(os.environ.get("VIME_SYNC_DEBUG"))}
# Where the process is relative to its command's own work, for a Ctrl-C that lands outside it (typer
# turns one during its argument parsing or after the command returned into a silent exit 130).
COMMAND_PHASE = {"began": False, "ended": False}


def set_debug(on: bool) -> None:
    _STATE["debug"] = on or bool(os.environ.get("VIME_SYNC_DEBUG"))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def describe(exc: BaseException) -> tuple[int, str]:
    """The exit code and the one line for ``exc``."""
    from sync.rules import RuleTableError

    if isinstance(exc, SyncError | RuleTableError | GitError):
        return REFUSED, _first_line(exc)
    if isinstance(exc, UnicodeEncodeError):  # vime-sync failed to write text it made: a bug, not input
        return (
            INTERNAL,
            f"internal error: {type(exc).__name__}: {_first_line(exc)} (run with --debug for the traceback)",
        )
    if isinstance(exc, UnicodeDecodeError):
        return REFUSED, f"a file is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8"
    if isinstance(exc, tomllib.TOMLDecodeError):
        return REFUSED, f"invalid TOML ({_first_line(exc)}); fix the syntax"
    if isinstance(exc, PermissionError):
        return (
            REFUSED,
            f"permission denied on {exc.filename}; give your user access to it, or pass another path",
        )
    if isinstance(exc, FileNotFoundError):
        return REFUSED, f"not found: {exc.filename}; check the path"
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        fix = "free some space" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else "check the path"
        return REFUSED, f"{exc.strerror or _first_line(exc)}{where}; {fix}"
    if isinstance(exc, ValueError):
        return REFUSED, _first_line(exc)
    return (
        INTERNAL,
        f"internal error: {type(exc).__name__}: {_first_line(exc)} (run with --debug for the traceback)",
    )


def guarded(command: str) -> Callable[[F], F]:
    """Wrap a command: any failure becomes ``vime-sync <command>: <one line>`` and its exit code."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            COMMAND_PHASE["began"] = True
            try:
                return fn(*args, **kwargs)
            except (typer.Exit, typer.Abort, click.exceptions.ClickException, click.exceptions.Exit):
                raise
            except KeyboardInterrupt as exc:
                if _STATE["debug"]:
                    raise
                typer.echo(
                    f"vime-sync {command}: interrupted ({_first_line(exc) or 'Ctrl-C'}); rolled back",
                    err=True,
                )
                raise typer.Exit(INTERRUPTED) from None
            except Exception as exc:
                if _STATE["debug"]:
                    raise
                code, line = describe(exc)
                typer.echo(f"vime-sync {command}: {line}", err=True)
                raise typer.Exit(code) from None
            finally:
                COMMAND_PHASE["ended"] = True

        run.one_line_handler = command  # type: ignore[attr-defined]  # checked for every command by a test
        return run  # type: ignore[return-value]

    return wrap


def interrupted_outside_a_command(exc: SystemExit) -> str | None:
    """The line for typer's own exit 130 (a Ctrl-C it caught while parsing the command line or after the
    command returned), or None when ``exc`` is anything else (a command's interrupt says so itself)."""
    if exc.code != INTERRUPTED or not isinstance(
        getattr(exc.__context__, "__cause__", None), KeyboardInterrupt
    ):
        return None
    if not COMMAND_PHASE["began"]:
        return "vime-sync: stopped by SIGINT while starting; nothing was changed"
    if COMMAND_PHASE["ended"]:
        return "vime-sync: stopped by SIGINT while exiting; the command had already finished"
    return None
