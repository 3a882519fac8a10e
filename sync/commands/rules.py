"""`vime-sync rules check` / `vime-sync rules list`: the rule tables, validated and shown."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sync.collisions import FIX, find_collisions, landing_path
from sync.commands.errors import guarded
from sync.gitio import is_git_repo, ls_tree, rev_parse
from sync.layout import parse_layout
from sync.model.errors import SyncError
from sync.rules import DEFAULT_DIRECTORY, KINDS, LAYOUT_TABLE, RuleTableError, load_rules
from sync.translator.check import check_tables
from sync.window.checks import SPECIAL_MODES

RulesDir = Annotated[Path | None, typer.Option("--rules", help="Rule tables (default: translations/).")]


def upstream_paths(upstream: Path, rev: str) -> list[str]:
    """The file paths of a slime tree: a git revision's (symlinks and submodules left out), else a
    directory's regular files (symlinks left out, as ``translate`` leaves them)."""
    if not upstream.exists():
        raise SyncError(f"--upstream {upstream} does not exist; pass a slime clone or directory")
    if is_git_repo(upstream) and (rev != "HEAD" or rev_parse(upstream, "HEAD") is not None):
        if rev_parse(upstream, rev) is None:
            raise SyncError(f"--rev {rev!r} is not a commit of {upstream}; pass an existing one")
        return [p for p, (mode, _) in ls_tree(upstream, rev).items() if mode not in SPECIAL_MODES]
    return [
        p.relative_to(upstream).as_posix()
        for p in sorted(upstream.rglob("*"))
        if p.is_file() and not p.is_symlink() and ".git" not in p.relative_to(upstream).parts
    ]


def path_collisions(upstream: Path, rev: str, rules_dir: Path | None) -> list[str]:
    """One line per pair of upstream files that land on one path (the rules, and the layout map
    beside them when there is one)."""
    rules = load_rules(rules_dir)
    layout_file = (rules_dir or DEFAULT_DIRECTORY) / LAYOUT_TABLE
    layout = (
        parse_layout(layout_file.read_text(encoding="utf-8"), str(layout_file))
        if layout_file.is_file()
        else None
    )
    targets = {p: landing_path(rules, layout, p) for p in upstream_paths(upstream, rev)}
    return [f"{upstream}: {c.describe()}; {FIX}" for c in find_collisions(targets)]


def register(app: typer.Typer) -> None:
    rules_app = typer.Typer(help="Inspect and validate the SGLang→vLLM rule tables.", no_args_is_help=True)

    @rules_app.command("check")
    @guarded("rules check")
    def check(
        rules_dir: RulesDir = None,
        no_vllm: Annotated[
            bool, typer.Option("--no-vllm", help="Skip importing the vLLM targets of module rules.")
        ] = False,
        upstream: Annotated[
            Path | None,
            typer.Option(
                "--upstream",
                help="Also check a slime tree (a directory, or a git repository at --rev): no two of its files "
                "may translate to one path.",
            ),
        ] = None,
        rev: Annotated[
            str, typer.Option("--rev", help="With --upstream on a git repository: the revision.")
        ] = "HEAD",
    ) -> None:
        """Validate the tables: kinds, duplicate ids, shadowed rules, vLLM targets that do not import;
        with --upstream, also the paths of that tree (two files onto one path)."""
        problems = check_tables(rules_dir, check_imports=not no_vllm)
        if upstream is not None and not problems:
            problems = path_collisions(upstream, rev, rules_dir)
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
