"""`vime-sync resolve`: apply decisions.json on the sync branch (commit 2, no markers), record them, run the gate."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from sync.commands.errors import guarded
from sync.model.errors import SyncError


def gate_step(console: Console) -> Callable[[Path, Path], bool | None]:
    """The gate as a stage of resolve: True/False, or None when the gate is not installed."""

    def run(worktree: Path, report_dir: Path) -> bool | None:
        try:
            from sync.gate import GateConfigError, run_gate
            from sync.gate.file_prs import FilePRsError, load_file_prs
        except Exception as exc:  # not installed, or broken: resolve still completes
            console.print(
                f"[yellow]gate not available ({exc}); run `vime-sync gate` once it is installed[/yellow]"
            )
            return None
        with console.status("running the gate (static checks + contract tests)"):
            try:
                result = run_gate(worktree, report_dir, load_file_prs(report_dir, None)[0])
            except (GateConfigError, FilePRsError) as exc:
                raise SyncError(f"{exc} (nothing was committed)") from None
        return bool(result.passed)

    return run


def register(app: typer.Typer) -> None:
    @app.command("resolve")
    @guarded("resolve")
    def resolve(
        worktree: Annotated[
            Path, typer.Option("--worktree", help="The sync worktree (default: here).")
        ] = Path("."),
        decisions: Annotated[
            Path | None,
            typer.Option(
                "--decisions",
                help="decisions.json to apply (default: the one in the window's report folder).",
            ),
        ] = None,
        gate: Annotated[
            bool, typer.Option("--gate/--no-gate", help="Run the gate after the resolve commit.")
        ] = True,
        repair: Annotated[
            bool,
            typer.Option(
                "--repair",
                help="Only undo what a killed (kill -9) resolve or window left half-made, then stop.",
            ),
        ] = False,
    ) -> None:
        """Apply the review decisions: commit 2 with no conflict markers, then the gate; all of it or nothing."""
        from sync.commands.window import repair_killed
        from sync.window.resolve import AlreadyResolved, resolve_branch

        console = Console()
        if repair:
            repair_killed(worktree, console)
            return
        try:
            result = resolve_branch(worktree, decisions, gate_step(console) if gate else None)
        except AlreadyResolved as exc:
            typer.echo(f"vime-sync resolve: {exc}")
            return
        if result.gate_only:
            console.print(
                f"the window was resolved; its gate had not run: ran it now (commit {result.commit[:10]})"
            )
        else:
            applied = ", ".join(f"{n} {k}" for k, n in sorted(result.applied.items())) or "nothing"
            console.print(
                f"[green]resolved[/green]: {applied}; commit {result.commit[:10]}; {result.recorded} decisions recorded"
            )
        if result.gate_passed is None:
            return
        console.print(
            "[green]gate passed[/green]"
            if result.gate_passed
            else f"[red]gate failed[/red]: see {result.report_dir}/gate.json"
        )
        if not result.gate_passed:
            raise typer.Exit(1)
