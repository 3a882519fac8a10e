"""`vime-sync status`: the sync branch's state — questions by tier, markers left, gate result."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from sync.commands.errors import guarded


def register(app: typer.Typer) -> None:
    @app.command("status")
    @guarded("status")
    def status(
        worktree: Annotated[
            Path, typer.Option("--worktree", help="The sync worktree (default: here).")
        ] = Path("."),
    ) -> None:
        """Show questions by tier (and how many Decide are open), conflict markers left, and the gate result."""
        from sync.gitio import GitError
        from sync.model.errors import SyncError
        from sync.window.status import sync_status

        console = Console()
        try:
            st = sync_status(worktree)
        except (SyncError, GitError) as exc:
            typer.echo(f"vime-sync status: {exc}", err=True)
            raise typer.Exit(1) from None
        table = Table(title=f"{st.branch}: {'resolved' if st.resolved else 'waiting for review'}")
        table.add_column("item")
        table.add_column("value", justify="right")
        for tier, n in st.tiers.items():
            table.add_row(f"questions: {tier}", str(n))
        table.add_row("Decide questions unanswered", str(len(st.unanswered_decide)))
        table.add_row("conflict markers left", f"{sum(st.markers.values())} in {len(st.markers)} files")
        table.add_row("files settled per top-level statement (no question)", str(len(st.settled)))
        gate = "not run" if st.gate is None else ("passed" if st.gate.get("passed") else "failed")
        table.add_row("gate", gate)
        console.print(table)
        for path, n in sorted(st.markers.items()):
            console.print(f"  {path}: {n} hunk(s) with markers")
        for path, what in sorted(st.settled.items()):
            console.print(f"  {path}: settled per statement; {what}")
        if st.gate and not st.gate.get("passed"):
            for failure in st.gate.get("failures", [])[:10]:
                console.print(f"  [red]{failure.get('check')}[/red] {failure.get('message')}")
        console.print(f"reports: {st.report_dir}")
