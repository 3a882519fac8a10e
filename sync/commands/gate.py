"""`vime-sync gate`: static checks and hook contracts on a sync worktree; exit 1 when it fails."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from sync.commands.errors import guarded
from sync.gate.file_prs import FilePRsError, load_file_prs
from sync.model.errors import SyncError


def default_report_dir(worktree: Path) -> Path:
    """On a sync branch (or the follow branch: its last PR's window): ``reports/slime-<from>-<to>``; anywhere else (e.g. main, where a
    merged window's GATE.md is committed) ``<.git>/vime-sync/gate``: never a folder of the user's tree."""
    from sync.gitio import git_text
    from sync.window.checks import git_common_dir
    from sync.window.follow_branch import window_name_of

    branch = git_text(worktree, "rev-parse", "--abbrev-ref", "HEAD")
    name = window_name_of(worktree, branch)
    if name is not None:
        return worktree / "reports" / name
    return git_common_dir(worktree) / "vime-sync" / "gate"


def checked_worktree(worktree: Path) -> Path:
    """The top of the git worktree holding ``worktree``; refuse a folder outside any repository."""
    from sync.gitio import git_text, is_git_repo

    worktree = worktree.resolve()
    if not worktree.is_dir():
        raise SyncError(f"worktree {worktree} does not exist; pass --worktree PATH")
    if not is_git_repo(worktree) or git_text(worktree, "rev-parse", "--is-inside-work-tree") != "true":
        raise SyncError(f"{worktree} is not inside a git worktree; pass --worktree PATH of the sync worktree")
    return Path(git_text(worktree, "rev-parse", "--show-toplevel")).resolve()


def _regressions(
    console: Console,
    worktree: Path,
    report_dir: Path,
    mapping: dict[str, list[int | str]],
    before: str | None,
    contracts: bool,
) -> None:
    """``--regressions``: new / fixed / pre-existing failures, each new one with its PR; exit 1 on new."""
    from sync.gate import GateConfigError
    from sync.gate.regression import regression_gate, write_regressions
    from sync.gitio import GitError
    from sync.model.gate import pr_label

    with console.status("gate: starting") as status:
        try:
            result = regression_gate(
                worktree, before, mapping, contracts=contracts, on_step=lambda s: status.update(f"gate: {s}")
            )
        except GateConfigError as exc:
            console.print(f"vime-sync gate: {exc}", markup=False)
            raise typer.Exit(1) from None
        except (ValueError, GitError) as exc:
            console.print(
                f"vime-sync gate: {exc}; pass --before REV (the downstream before the window)", markup=False
            )
            raise typer.Exit(1) from None
    write_regressions(result, report_dir)
    for f in result.new:
        console.print(
            f"NEW {f.describe()} <- {', '.join(pr_label(p) for p in f.prs) or '?'}",
            markup=False,
            highlight=False,
        )
    console.print(
        f"gate (regressions) {'PASSED' if result.passed else 'FAILED'}: {len(result.new)} new, {len(result.fixed)} fixed, "
        f"{len(result.preexisting)} pre-existing; report: {report_dir / 'GATE.md'}",
        markup=False,
    )
    raise typer.Exit(0 if result.passed else 1)


def register(app: typer.Typer) -> None:
    @app.command("gate")
    @guarded("gate")
    def gate(
        worktree: Annotated[Path, typer.Option(help="The sync branch's worktree (default: here).")] = Path(
            "."
        ),
        report: Annotated[
            Path | None, typer.Option(help="Report directory for gate.json and GATE.md.")
        ] = None,
        file_prs: Annotated[Path | None, typer.Option(help="JSON {path: [PR, ...]} of the window.")] = None,
        regressions: Annotated[
            bool,
            typer.Option(
                "--regressions",
                help="Fail only on what the window broke: compare with the tree before it, bisect per-PR commits.",
            ),
        ] = False,
        before: Annotated[
            str | None,
            typer.Option(
                "--before",
                help="With --regressions: the tree before the window (default: the branch's base).",
            ),
        ] = None,
        static_only: Annotated[
            bool,
            typer.Option(
                "--static-only",
                help="With --regressions: compare the static checks only, not the hook contracts.",
            ),
        ] = False,
    ) -> None:
        """Static checks (compile, sglang imports, --vllm-* flags, conflict markers) and the hook contracts."""
        from sync.gate import GateConfigError, run_gate
        from sync.window.transaction import check_killed_run

        console = Console(stderr=True, soft_wrap=True)
        worktree = checked_worktree(worktree)
        check_killed_run(worktree)  # a branch a killed window or resolve left half-made: its way out
        report_dir = (report or default_report_dir(worktree)).resolve()
        try:
            mapping, note = load_file_prs(report_dir, file_prs)
        except FilePRsError as exc:
            console.print(f"vime-sync gate: {exc}", markup=False)
            raise typer.Exit(1) from None
        if regressions:
            _regressions(console, worktree, report_dir, mapping, before, contracts=not static_only)
        with console.status("gate: starting") as status:
            try:
                result = run_gate(
                    worktree, report_dir, mapping, on_step=lambda s: status.update(f"gate: {s}")
                )
            except GateConfigError as exc:
                console.print(f"vime-sync gate: {exc}")
                raise typer.Exit(1) from None
        if note:
            result.notes.append(note)
        if not any(check.checked for check in result.checks):
            raise SyncError(
                f"the gate checked 0 files in {worktree}; pass --worktree PATH of the sync worktree"
            )
        for check in result.checks:
            console.print(f"{check.name:16} {check.status:8} {check.checked:5}  {check.note}")
        for failure in result.failures:
            console.print(failure.describe(), markup=False, highlight=False)
        verdict = (
            "PASSED"
            if result.passed
            else f"FAILED: {len(result.failures)} failure(s), PRs {result.prs or '-'}"
        )
        console.print(f"gate {verdict}; report: {report_dir / 'GATE.md'}", markup=False)
        raise typer.Exit(0 if result.passed else 1)
