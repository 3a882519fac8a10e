"""`vime-sync window`: 3-way merge an upstream PR window into vime on a new branch (porcelain over sync.window)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from sync.commands.errors import guarded


def repair_killed(where: Path, console: Console) -> None:
    """``--repair``: carry out the undo log a killed run left in the downstream's ``.git``, and say what."""
    from sync.window.checks import git_common_dir, toplevel
    from sync.window.transaction import repair

    doc, done = repair(git_common_dir(toplevel(where)), "vime-sync repair")
    if doc is None:
        console.print("nothing to repair: no killed vime-sync run left an undo log here")
    elif not done:
        console.print(f"the killed `{doc['command']}` run had made its final commit: nothing to undo")
    else:
        console.print(
            f"repaired: undid {len(done)} step(s) a killed `{doc['command']}` (pid {doc.get('pid', '?')}) left: "
            + "; ".join(done),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def register(app: typer.Typer) -> None:
    @app.command("window")
    @guarded("window")
    def window(
        upstream: Annotated[
            Path | None, typer.Option("--upstream", help="Path to a slime clone (bare or not).")
        ] = None,
        to_pr: Annotated[
            int | None,
            typer.Option("--to", help="Last upstream PR of the window (its merge commit is the tip)."),
        ] = None,
        from_pr: Annotated[
            int | None,
            typer.Option(
                "--from",
                help="First PR of the window; the cutoff is the commit of PR #from-1 (default: the state file).",
            ),
        ] = None,
        downstream: Annotated[
            Path, typer.Option("--downstream", help="The vime repository (default: here).")
        ] = Path("."),
        cutoff: Annotated[
            str | None, typer.Option("--cutoff", help="Cutoff commit instead of PR #from-1.")
        ] = None,
        worktree: Annotated[
            Path | None,
            typer.Option(
                "--worktree",
                help="Where to check out the sync branch (default: <downstream>/../<name>-sync-<from>-<to>).",
            ),
        ] = None,
        upstream_ref: Annotated[
            str,
            typer.Option("--upstream-ref", help="Upstream branch whose first-parent history is merge order."),
        ] = "HEAD",
        from_commit: Annotated[
            str | None,
            typer.Option(
                "--from-commit", help="First upstream commit of the window (the cutoff is the one before)."
            ),
        ] = None,
        to_commit: Annotated[
            str | None,
            typer.Option("--to-commit", help="Last upstream commit of the window, instead of --to."),
        ] = None,
        per_pr: Annotated[
            bool, typer.Option("--per-pr", help="One commit per upstream PR, in merge order (for bisecting).")
        ] = False,
        repair: Annotated[
            bool,
            typer.Option(
                "--repair",
                help="Undo what a killed (kill -9) window or resolve left half-made, as its rollback would have; "
                "then run the window if --to is given.",
            ),
        ] = False,
        rewind: Annotated[
            bool,
            typer.Option(
                "--rewind",
                help="Allow a window that starts below the last sync's cutoff (its first PRs were synced already).",
            ),
        ] = False,
        timings: Annotated[
            bool,
            typer.Option(
                "--timings",
                help="Print the seconds of each stage, and write those known before the reports into "
                "SUMMARY.md (which then differs from run to run).",
            ),
        ] = False,
    ) -> None:
        """Translate and 3-way merge upstream PRs (cutoff, #to] into branch sync/slime-<from>-<to> in a separate worktree."""
        from sync.window import print_summary, run_window
        from sync.window.history import WindowError, window_by_commit
        from sync.window.summary_table import print_timings

        console = Console()
        if repair:
            repair_killed(downstream, console)
            if to_pr is None and to_commit is None:
                return
        if upstream is None:
            raise typer.BadParameter("--upstream PATH is required (a slime clone)", param_hint="--upstream")
        if to_commit is not None or from_commit is not None:
            if (to_commit and to_pr is not None) or (from_commit and (from_pr is not None or cutoff)):
                raise WindowError("give a window by PR numbers or by commits, not both (--to/--to-commit)")
            by_to, by_from, by_cutoff = window_by_commit(upstream, to_commit, from_commit, upstream_ref)
            to_pr = by_to if by_to is not None else to_pr
            from_pr, cutoff = (by_from, by_cutoff) if from_commit else (from_pr, cutoff)
        if to_pr is None:
            raise WindowError("no tip: give --to N (the last PR) or --to-commit COMMIT")
        result = run_window(
            upstream, downstream, to_pr, from_pr, cutoff, per_pr=per_pr, console=console,
            worktree=worktree, upstream_ref=upstream_ref, rewind=rewind, timings_in_summary=timings,
        )  # fmt: skip
        print_summary(result, console=console)
        if timings:
            print_timings(result, console=console)
        console.print(
            f"Next: review {result.report_dir}/QUESTIONS.md (or open review.html), save decisions.json there, "
            f"then run `vime-sync resolve --worktree {result.worktree}`."
        )
