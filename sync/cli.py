"""The ``vime-sync`` command line: registers every sub-command module under ``sync/commands``."""

from __future__ import annotations

import os
import signal
import sys


def _interrupted_while_starting(signum: int, _frame: object) -> None:
    """Ctrl-C or SIGTERM while the commands load (about a second of imports): nothing has started, so
    there is nothing to undo; one line instead of an import traceback."""
    # straight to file descriptor 2: an import may have sys.stderr redirected at this moment
    line = f"vime-sync: stopped by {signal.Signals(signum).name} while starting; nothing was changed\n"
    os.write(2, line.encode())
    os._exit(130)


def _while_starting() -> dict[int, object]:
    """Route Ctrl-C and SIGTERM to the one-line exit; returns the handlers to put back once loaded."""
    replaced: dict[int, object] = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            if signal.getsignal(signum) in (signal.SIG_DFL, signal.default_int_handler):
                replaced[signum] = signal.signal(signum, _interrupted_while_starting)
        except ValueError:  # imported outside the main thread: leave signals alone
            break
    return replaced


def _started(replaced: dict[int, object]) -> None:
    for signum, previous in replaced.items():
        signal.signal(signum, previous)  # loaded: the commands' own handling from here on


_STARTING = _while_starting()

from typing import Annotated  # noqa: E402

import typer  # noqa: E402

from sync.commands import audit, demo, follow, gate, ledger, resolve, rules, status, translate, window  # noqa: E402
from sync.commands.errors import set_debug  # noqa: E402

_started(_STARTING)

app = typer.Typer(
    name="vime-sync",
    help="Keep vime in step with slime: translate SGLang code to vLLM, 3-way merge a PR window, review, gate. "
    "Exit codes: 0 done, 1 refused input or a failed check, 2 usage, 3 internal error, 130 interrupted.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def main(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the traceback of a failure instead of one line.")
    ] = False,
) -> None:
    """Keep vime in step with slime. Exit codes: 0 done, 1 refused input or failed check, 2 usage, 3 bug, 130 interrupted."""
    set_debug(debug)


for _module in (translate, rules, window, follow, resolve, status, gate, ledger, audit, demo):
    _module.register(app)


def _redeliver_swallowed_interrupts() -> None:
    """A Ctrl-C or SIGTERM that lands where Python cannot raise (a destructor, a callback from C code:
    pydantic builds its validators in one) is printed as "Exception ignored" and dropped, and the run
    went on to the end as if never stopped. Send the signal again: it is raised at the next line of
    ordinary Python, where the command's rollback and its one-line report see it. (From a timer: a
    signal handled inside this hook would raise inside it, and be dropped again.)"""
    import _thread
    import threading

    from sync.window.transaction import Interrupted  # SIGTERM's exception; SIGINT's is KeyboardInterrupt

    previous = sys.unraisablehook

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            signum = signal.SIGTERM if isinstance(unraisable.exc_value, Interrupted) else signal.SIGINT
            threading.Timer(0.05, _thread.interrupt_main, args=(signum,)).start()
            return
        previous(unraisable)

    sys.unraisablehook = hook


def run() -> None:
    """The ``vime-sync`` process: once a window or resolve has committed, Ctrl-C or SIGTERM can no
    longer make it report "interrupted; rolled back" over a complete result (tests drive ``app``)."""
    starting = _while_starting()  # these imports load the merge stack: another second on a busy machine
    from sync.commands.errors import interrupted_outside_a_command
    from sync.window.transaction import ignore_signals_after_commit

    _redeliver_swallowed_interrupts()
    _started(starting)
    ignore_signals_after_commit()
    try:
        app()
    except KeyboardInterrupt:  # while typer still builds the command line: no command has started
        sys.stderr.write("vime-sync: stopped by SIGINT while starting; nothing was changed\n")
        sys.exit(130)
    except SystemExit as exc:
        line = interrupted_outside_a_command(exc)
        if line is not None:
            sys.stderr.write(line + "\n")
        raise


if __name__ == "__main__":
    run()
