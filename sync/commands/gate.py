"""`vime-sync gate`: static checks and hook contracts on a sync worktree; exit 1 when it fails."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from sync.commands.errors import guarded
from sync.window.errors import SyncError

FILE_PRS_JSON = "file_prs.json"  # {path: [PR, ...]}, when a tool writes the map on its own
DECISIONS_JSON = "decisions.json"  # the window's review file: {"files": {path: {"prs": [...]}}}


class FilePRsError(ValueError):
    """A file -> PRs map that cannot be read; the message is one line naming the file."""


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise FilePRsError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except UnicodeDecodeError:
        raise FilePRsError(f"{path} is not UTF-8 text; save it as UTF-8 JSON") from None


def _as_file_prs(mapping: object, path: Path) -> dict[str, list[int | str]]:
    if not isinstance(mapping, dict) or not all(isinstance(v, list) for v in mapping.values()):
        raise FilePRsError(f"{path} must map file paths to lists of PR numbers")
    return {str(k): [pr if isinstance(pr, int) else str(pr) for pr in v] for k, v in mapping.items()}


def load_file_prs(report_dir: Path, explicit: Path | None) -> tuple[dict[str, list[int | str]], str | None]:
    """The file -> PRs map: ``--file-prs``, else ``file_prs.json`` or ``decisions.json`` in the report."""
    if explicit is not None:
        if not explicit.is_file():
            raise FilePRsError(f"--file-prs {explicit} not found")
        return _as_file_prs(_read_json(explicit), explicit), None
    if (report_dir / FILE_PRS_JSON).is_file():
        return _as_file_prs(_read_json(report_dir / FILE_PRS_JSON), report_dir / FILE_PRS_JSON), None
    if (report_dir / DECISIONS_JSON).is_file():
        files = _read_json(report_dir / DECISIONS_JSON)
        files = files.get("files", {}) if isinstance(files, dict) else {}
        mapping = {path: info.get("prs", []) for path, info in files.items() if isinstance(info, dict)}
        return _as_file_prs(mapping, report_dir / DECISIONS_JSON), None
    return {}, f"no {FILE_PRS_JSON} or {DECISIONS_JSON} in {report_dir}: failures name files but not PRs"


def default_report_dir(worktree: Path) -> Path:
    """On a sync branch: its window's ``reports/slime-<from>-<to>``; anywhere else (e.g. main, where a
    merged window's GATE.md is committed) ``<.git>/vime-sync/gate``: never a folder of the user's tree."""
    from sync.window.checks import git_common_dir
    from sync.window.gitio import git_text

    branch = git_text(worktree, "rev-parse", "--abbrev-ref", "HEAD")
    m = re.fullmatch(r"sync/(slime-\d+-\d+)", branch)
    if m:
        return worktree / "reports" / m.group(1)
    return git_common_dir(worktree) / "vime-sync" / "gate"


def checked_worktree(worktree: Path) -> Path:
    """The top of the git worktree holding ``worktree``; refuse a folder outside any repository."""
    from sync.window.gitio import git_text, is_git_repo

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
    import subprocess

    from sync.gate import GateConfigError
    from sync.gate.regression import regression_gate, write_regressions
    from sync.gate.result import pr_label

    with console.status("gate: starting") as status:
        try:
            result = regression_gate(
                worktree, before, mapping, contracts=contracts, on_step=lambda s: status.update(f"gate: {s}")
            )
        except GateConfigError as exc:
            console.print(f"vime-sync gate: {exc}", markup=False)
            raise typer.Exit(1) from None
        except (ValueError, subprocess.CalledProcessError) as exc:
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

        console = Console(stderr=True, soft_wrap=True)
        worktree = checked_worktree(worktree)
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
