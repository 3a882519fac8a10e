"""The ``vime-sync`` command line: registers every sub-command module under ``sync/commands``."""

from __future__ import annotations

import typer

from sync.commands import demo, gate, ledger, resolve, rules, status, translate, window

app = typer.Typer(
    name="vime-sync",
    help="Keep vime in step with slime: translate SGLang code to vLLM, 3-way merge a PR window, review, gate.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _module in (translate, rules, window, resolve, status, gate, ledger, demo):
    _module.register(app)


if __name__ == "__main__":
    app()
