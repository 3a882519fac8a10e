"""`vime-sync rules check` / `vime-sync rules list`: the rule tables, validated and shown."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from sync.rules import RuleTableError, load_rules
from sync.translator.check import check_tables

RulesDir = Annotated[Path | None, typer.Option("--rules", help="Rule tables (default: translations/).")]


def register(app: typer.Typer) -> None:
    rules_app = typer.Typer(help="Inspect and validate the SGLang→vLLM rule tables.", no_args_is_help=True)

    @rules_app.command("check")
    def check(
        rules_dir: RulesDir = None,
        no_vllm: Annotated[
            bool, typer.Option("--no-vllm", help="Skip importing the vLLM targets of module rules.")
        ] = False,
    ) -> None:
        """Validate the tables: kinds, duplicate ids, shadowed rules, vLLM targets that do not import."""
        problems = check_tables(rules_dir, check_imports=not no_vllm)
        for problem in problems:
            typer.echo(problem, err=True)
        if problems:
            raise typer.Exit(1)
        rules = load_rules(rules_dir)
        typer.echo(f"rules check: {len(rules.rules)} rules, no problems (hash {rules.hash[:12]})")

    @rules_app.command("list")
    def list_rules(
        rules_dir: RulesDir = None,
        kind: Annotated[str | None, typer.Option("--kind", help="Only this kind of rule.")] = None,
    ) -> None:
        """Show the rules (id, kind, from, to, status) — the tables as a reviewer reads them."""
        try:
            rules = load_rules(rules_dir)
        except RuleTableError as error:
            typer.echo(f"vime-sync rules: {error}", err=True)
            raise typer.Exit(2) from None
        table = Table(title=f"rules ({rules.hash[:12]})")
        for column in ("id", "kind", "from", "to", "status"):
            table.add_column(column)
        for rule in rules.rules:
            if kind is None or rule.kind == kind:
                table.add_row(rule.id, rule.kind, rule.from_, rule.to, rule.status)
        Console().print(table)

    app.add_typer(rules_app, name="rules")
