"""`vime-sync rules` — placeholder until its issue lands (replace this module whole)."""

import typer


def register(app: typer.Typer) -> None:
    @app.command("rules")
    def _placeholder() -> None:
        """Not built yet."""
        typer.echo("vime-sync rules: not built yet", err=True)
        raise typer.Exit(2)
