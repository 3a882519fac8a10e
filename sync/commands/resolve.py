"""`vime-sync resolve`: apply decisions.json on the sync branch (commit 2, no markers), record them, run the gate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console


def _file_prs(report_dir: Path) -> dict[str, list[int]]:
    doc = json.loads((report_dir / "decisions.json").read_text(encoding="utf-8"))
    return {
        path: [p for p in info.get("prs", []) if isinstance(p, int)]
        for path, info in doc.get("files", {}).items()
    }


def run_gate_step(worktree: Path, report_dir: Path, console: Console) -> bool | None:
    """Run the gate if it is installed; None when it is not available."""
    try:
        from sync.gate import run_gate
    except ImportError as exc:
        console.print(
            f"[yellow]gate not available ({exc}); run `vime-sync gate` once it is installed[/yellow]"
        )
        return None
    with console.status("running the gate (static checks + contract tests)"):
        result = run_gate(worktree, report_dir, _file_prs(report_dir))
    return bool(result.passed)


def register(app: typer.Typer) -> None:
    @app.command("resolve")
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
    ) -> None:
        """Apply the review decisions: commit 2 with no conflict markers; refuses while a Decide question is open."""
        from sync.window.errors import SyncError
        from sync.window.gitio import GitError, git_text
        from sync.window.resolve import resolve_branch
        from sync.window.worktree import commit_paths

        console = Console()
        try:
            result = resolve_branch(worktree, decisions)
        except (SyncError, GitError) as exc:
            typer.echo(f"vime-sync resolve: {exc}", err=True)
            raise typer.Exit(1) from None
        applied = ", ".join(f"{n} {k}" for k, n in sorted(result.applied.items())) or "nothing"
        console.print(
            f"[green]resolved[/green]: {applied}; commit {result.commit[:10]}; {result.recorded} decisions recorded"
        )
        if not gate:
            return
        passed = run_gate_step(result.worktree, result.report_dir, console)
        if passed is None:
            return
        rel = (result.report_dir / "gate.json").relative_to(result.worktree).as_posix()
        if (result.worktree / rel).exists():
            date = git_text(result.worktree, "log", "-1", "--format=%cd", "--date=raw")
            commit_paths(
                result.worktree,
                [rel, *_gate_files(result)],
                f"sync: gate {'passed' if passed else 'failed'}\n",
                date,
            )
        console.print(
            "[green]gate passed[/green]"
            if passed
            else f"[red]gate failed[/red]: see {result.report_dir}/gate.json"
        )
        if not passed:
            raise typer.Exit(1)


def _gate_files(result) -> list[str]:  # noqa: ANN001
    """Other report files the gate wrote next to gate.json (e.g. GATE.md)."""
    return [p.relative_to(result.worktree).as_posix() for p in result.report_dir.glob("GATE*")]
