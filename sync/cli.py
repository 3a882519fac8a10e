"""The ``vime-sync`` command line: registers every sub-command module under ``sync/commands``."""

from __future__ import annotations

from typing import Annotated

import typer

from sync.commands import demo, gate, ledger, resolve, rules, status, translate, window
from sync.commands.errors import set_debug

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


for _module in (translate, rules, window, resolve, status, gate, ledger, demo):
    _module.register(app)


def run() -> None:
    """The ``vime-sync`` process: once a window or resolve has committed, Ctrl-C or SIGTERM can no
    longer make it report "interrupted; rolled back" over a complete result (tests drive ``app``)."""
    from sync.window.transaction import ignore_signals_after_commit

    ignore_signals_after_commit()
    app()


if __name__ == "__main__":
    run()
