"""`vime-sync rules check` / `vime-sync rules list`: the rule tables, validated and shown."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sync.commands.errors import guarded
from sync.rules import KINDS, RuleTableError, load_rules
from sync.translator.check import check_tables

RulesDir = Annotated[Path | None, typer.Option("--rules", help="Rule tables (default: translations/).")]


def register(app: typer.Typer) -> None:
    rules_app = typer.Typer(help="Inspect and validate the SGLang→vLLM rule tables.", no_args_is_help=True)

    @rules_app.command("check")
    @guarded("rules check")
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
    @guarded("rules list")
    def list_rules(
        rules_dir: RulesDir = None,
        kind: Annotated[str | None, typer.Option("--kind", help="Only this kind of rule.")] = None,
    ) -> None:
        """Show the rules, one per line (id, kind, status, from -> to): easy to grep."""
        try:
            rules = load_rules(rules_dir)
        except RuleTableError as error:
            typer.echo(f"vime-sync rules: {error}", err=True)
            raise typer.Exit(1) from None
        if kind is not None and kind not in KINDS:
            typer.echo(f"vime-sync rules: unknown --kind {kind!r}; use one of {', '.join(KINDS)}", err=True)
            raise typer.Exit(1)
        typer.echo(f"# {len(rules.rules)} rules, hash {rules.hash[:12]}: id, kind, status, from -> to")
        for rule in rules.rules:
            if kind is None or rule.kind == kind:
                arrow = f" -> {rule.to}" if rule.to else ""
                typer.echo(f"{rule.id}\t{rule.kind}\t{rule.status}\t{rule.from_}{arrow}")

    app.add_typer(rules_app, name="rules")
