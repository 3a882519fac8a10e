"""`vime-sync demo`: build the embedded slime/vime demo repositories and sync a whole window on them."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from sync.commands.errors import guarded


def register(app: typer.Typer) -> None:
    @app.command("demo")
    @guarded("demo")
    def demo(
        directory: Annotated[
            Path | None,
            typer.Option(
                "--dir", help="Empty directory for the demo repos (default: a new temporary directory)."
            ),
        ] = None,
    ) -> None:
        """Build the embedded demo (a slime-style upstream, a vime-style downstream) and run window #111..#122 on it."""
        from sync.demo.build import build_demo
        from sync.window import print_summary, run_window

        console = Console()
        if directory is not None and directory.exists() and not directory.is_dir():
            typer.echo(
                f"vime-sync demo: --dir {directory} is a file; pass a new or empty directory", err=True
            )
            raise typer.Exit(1)
        dest = directory or Path(tempfile.mkdtemp(prefix="vime-sync-demo-"))
        try:
            repos = build_demo(dest)
        except (FileExistsError, NotADirectoryError, ValueError) as error:
            typer.echo(f"vime-sync demo: {error}", err=True)
            raise typer.Exit(1) from None
        console.print(
            f"[bold]Demo repositories[/bold]: upstream {repos.upstream}  downstream {repos.downstream}"
        )
        console.print(
            f"Running: vime-sync window --upstream {repos.upstream} --downstream {repos.downstream} "
            f"--from {repos.from_pr} --to {repos.to_pr}"
        )
        result = run_window(
            repos.upstream, repos.downstream, to_pr=repos.to_pr, from_pr=repos.from_pr, console=console
        )
        print_summary(result, console=console)
        console.print(
            f"\nNext: review [bold]{result.report_dir}/QUESTIONS.md[/bold] (or open review.html there), then "
            f"`vime-sync resolve` in {result.worktree}."
        )
