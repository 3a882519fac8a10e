"""`vime-sync follow`: mirror upstream PR by PR on the sync/follow branch (porcelain over sync.follow)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from sync.commands.errors import INTERRUPTED, REFUSED, guarded

if TYPE_CHECKING:
    from sync.follow.run import FollowOptions, FollowPlan, StepOutcome


def _line(outcome: StepOutcome) -> str:
    """One line per PR: what became of it, its questions, the gate, the seconds."""
    s = outcome.summary
    if s is None:
        return f"{outcome.label}: stopped"
    if outcome.stop:
        what = "waits for answers" if s.gate.startswith("waiting") else "gate failed"
    else:
        what = "mirrored (answers given)" if s.person else "mirrored"
    return (
        f"{outcome.label} {what} · {s.decide} Decide, {s.confirm} Confirm, {s.settled} Settled · "
        f"gate {s.gate} · {s.seconds:.1f} s"
    )


def _print_plan(console: Console, p: FollowPlan, options: FollowOptions) -> None:
    from sync.model.names import FOLLOW_BRANCH

    site = p.site
    if not site.branch_exists:
        console.print(f"would create {FOLLOW_BRANCH} at {site.tip[:10]} in {site.worktree}")
    elif site.fast_forward_from:
        console.print(
            f"would fast-forward {FOLLOW_BRANCH} from {site.fast_forward_from[:10]} to {site.tip[:10]}"
        )
    else:
        console.print(f"{FOLLOW_BRANCH} at {site.tip[:10]} in {site.worktree}")
    if p.pending is not None:
        if p.pending.resolved is None and p.open_decide:
            console.print(
                f"#{p.pending.pr} waits for answers: {p.open_decide} Decide question(s) open; would stop there"
            )
            return
        what = "resolve it with the answers given" if p.pending.resolved is None else "gate it again"
        console.print(f"#{p.pending.pr} is unfinished: would {what}, then go on")
    console.print(
        f"cutoff {p.cutoff[:10] if p.cutoff else '-'}; would take {len(p.upcoming.steps)} PR(s) in merge order:"
    )
    for step in p.upcoming.steps:
        files = sum(p.files.get(c.sha, 0) for c in step.commits)
        console.print(f"  {step.label} {step.tip.title} ({files} files)", markup=False, highlight=False)
    if p.upcoming.until_done:
        console.print(f"PR #{options.until} is mirrored already")
    if p.upcoming.waiting:
        console.print(f"{len(p.upcoming.waiting)} direct push(es) at the tip wait for the next PR")
    console.print("each would stop follow if it asks a Decide question or its gate finds a new failure")


def register(app: typer.Typer) -> None:
    @app.command("follow")
    @guarded("follow")
    def follow(
        upstream: Annotated[Path, typer.Option("--upstream", help="Path to a slime clone (bare or not).")],
        downstream: Annotated[
            Path, typer.Option("--downstream", help="The vime repository (default: here).")
        ] = Path("."),
        until: Annotated[
            int | None, typer.Option("--until", help="Stop after mirroring upstream PR #N (in merge order).")
        ] = None,
        max_prs: Annotated[
            int | None, typer.Option("--max", min=1, help="Mirror at most N PRs in this run.")
        ] = None,
        dry_run: Annotated[
            bool, typer.Option("--dry-run", help="Only say what it would do; write nothing.")
        ] = False,
        from_pr: Annotated[
            int | None,
            typer.Option(
                "--from", help="First run only, without a state file: the first PR (cutoff PR #from-1)."
            ),
        ] = None,
        cutoff: Annotated[
            str | None, typer.Option("--cutoff", help="First run only: the cutoff commit instead of --from.")
        ] = None,
        worktree: Annotated[
            Path | None,
            typer.Option(
                "--worktree",
                help="Where sync/follow is checked out (default: <downstream>/../<name>-sync-follow).",
            ),
        ] = None,
        upstream_ref: Annotated[
            str,
            typer.Option("--upstream-ref", help="Upstream branch whose first-parent history is merge order."),
        ] = "HEAD",
        gate: Annotated[
            bool, typer.Option("--gate/--no-gate", help="Gate each PR against the tree before it.")
        ] = True,
        repair: Annotated[
            bool,
            typer.Option(
                "--repair",
                help="First undo what a follow run killed by SIGKILL left (its undo log), then go on.",
            ),
        ] = False,
    ) -> None:
        """Mirror upstream PRs one by one onto branch sync/follow: each resolved by itself and gated when
        no question needs a person; stops at the first PR that does (answer it, run follow again)."""
        from sync.follow.run import FollowInterrupted, FollowOptions, plan
        from sync.follow.run import follow as run_follow
        from sync.model.errors import SyncError

        if from_pr is not None and cutoff is not None:
            raise SyncError("give the first run's start by --from N or by --cutoff COMMIT, not both")
        console = Console()
        if repair:
            from sync.commands.window import repair_killed

            repair_killed(downstream, console)
        options = FollowOptions(until, max_prs, from_pr, cutoff, worktree, upstream_ref, gate)
        if dry_run:
            _print_plan(console, plan(upstream, downstream, options), options)
            return
        try:
            with console.status("follow: mirroring the next upstream PR") as spinner:

                def report(o: StepOutcome) -> None:
                    console.print(_line(o), markup=False, highlight=False, soft_wrap=True)
                    spinner.update(f"follow: {o.label} done; mirroring the next upstream PR")

                result = run_follow(upstream, downstream, options, on_step=report)
        except FollowInterrupted as exc:
            kept = len(exc.result.steps)
            where = f"{exc.in_progress} rolled back" if exc.in_progress else "between PRs"
            typer.echo(
                f"vime-sync follow: interrupted ({where}); every PR mirrored before it stays ({kept} in this run)",
                err=True,
            )
            raise typer.Exit(INTERRUPTED) from None
        done = [o for o in result.steps if not o.stop]
        console.print(f"{len(done)} PR(s) mirrored on sync/follow in {result.worktree}")
        if result.stop:
            typer.echo(f"vime-sync follow: {result.stop}", err=True)
            raise typer.Exit(REFUSED)
        if result.up_to_date:
            tail = (
                f"; {len(result.waiting)} direct push(es) at the tip wait for the next PR"
                if result.waiting
                else ""
            )
            until_note = f" up to #{until}" if until is not None else ""
            console.print(f"up to date{until_note}{tail}")
        elif result.left:
            console.print(f"--max reached; {result.left} more PR(s) to take (run follow again)")
