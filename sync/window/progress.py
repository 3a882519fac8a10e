"""Rich progress for each stage of a sync (quiet when the console is quiet, e.g. in tests)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


@contextmanager
def stage_progress(console: Console, title: str, total: int) -> Iterator[Callable[[str], None]]:
    """A progress bar for one stage; yields ``advance(item_name)``."""
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[item]}", style="dim"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as progress:
        task = progress.add_task(title, total=total, item="")

        def advance(item: str) -> None:
            progress.update(task, advance=1, item=item[-60:])

        yield advance
        progress.update(task, item="done")


@contextmanager
def stage(console: Console, title: str) -> Iterator[list[str]]:
    """A spinner while a short stage runs, then one line saying what it found; append to the yielded list."""
    found: list[str] = []
    with console.status(f"[bold]{title}[/bold] ..."):
        yield found
    console.print(f"[green]✓[/green] [bold]{title}[/bold]" + (f": {'; '.join(found)}" if found else ""))
