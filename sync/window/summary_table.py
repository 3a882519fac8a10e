"""The final summary table every window run ends with (as a codemod ends with transformed/skipped/failed)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from sync.model.question import TIERS
from sync.reports.questions import tier_counts

if TYPE_CHECKING:
    from sync.window.result import WindowResult


def print_summary(result: WindowResult, console: Console | None = None) -> None:
    """Print counts by outcome, the question tiers, and where the branch, worktree and reports are."""
    console = console or Console()
    w = result.window
    table = Table(
        title=f"vime-sync window #{w.from_pr}..#{w.to_pr}: {len(w.prs)} PRs, {len(result.outcomes)} files"
    )
    table.add_column("outcome")
    table.add_column("files", justify="right")
    labels = [
        ("clean", "clean merges (incl. taken as theirs)"),
        ("structural", "settled per top-level statement (listed in SUMMARY.md)"),
        ("conflict", "files with conflict markers"),
        ("new", "new to vime"),
        ("deleted", "deleted"),
        ("renamed", "renamed"),
        ("modify_delete", "modify/delete questions"),
        ("binary", "binary questions"),
        ("port", "port requests (nothing lands)"),
        ("not_mirrored", "not mirrored (listed only)"),
    ]
    for key, label in labels:
        table.add_row(label, str(result.counts.get(key, 0)))
    tiers = tier_counts(result.questions)
    table.add_section()
    for tier in TIERS:
        table.add_row(f"questions: {tier}", str(tiers[tier]))
    console.print(table)
    console.print(f"branch [bold]{result.branch}[/bold], worktree {result.worktree}")
    console.print(f"reports in {result.report_dir} (SUMMARY.md, QUESTIONS.md, decisions.json, review.html)")
    console.print(
        f"translations: {result.cache_hits} from cache, {result.cache_misses} translated; {result.seconds:.1f} s"
    )


def print_timings(result: WindowResult, console: Console | None = None) -> None:
    """The wall seconds of each stage (``--timings``): where a slow window spends its time."""
    console = console or Console()
    table = Table(title="stage times")
    table.add_column("stage")
    table.add_column("seconds", justify="right")
    for name, seconds in result.timings.items():
        table.add_row(name, f"{seconds:.2f}")
    table.add_section()
    table.add_row("total", f"{result.seconds:.2f}")
    console.print(table)
