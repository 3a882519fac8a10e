"""The gate a sync branch must pass before it merges: static checks, then the hook contracts.

``run_gate(worktree, report_dir, file_prs)`` is the plumbing (data in, ``GateResult`` out, report
files written); ``vime-sync gate`` and the last step of ``vime-sync resolve`` call it. Every
failure names the files and the upstream PRs (from ``file_prs``) that touched them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sync.gate.config import GateConfig, GateConfigError, load_gate_config
from sync.gate.contracts import contract_failures, default_runs
from sync.gate.report import render_markdown, write_report
from sync.gate.static import run_static_checks
from sync.model.gate import CheckSummary, FilePRs, GateFailure, GateResult

__all__ = [
    "GateConfigError",
    "GateFailure",
    "GateResult",
    "load_gate_config",
    "render_markdown",
    "run_gate",
]

if TYPE_CHECKING:
    from sync.rules import RuleSet

StepCallback = Callable[[str], None]


def run_contracts(
    worktree: Path,
    file_prs: FilePRs,
    config: GateConfig,
    result: GateResult,
    on_step: StepCallback,
) -> None:
    runs = config.contracts or default_runs(worktree)
    source = config.source or "vime's own contracts against vime's default hooks"
    failed = 0
    for run in runs:
        on_step(f"contract {run.label}")
        failures, note = contract_failures(worktree, run, file_prs)
        failed += bool(failures)
        result.failures += failures
        if note and note not in result.notes:
            result.notes.append(note)
    files = sum(len(run.files) for run in runs)
    status = "failed" if failed else "passed"
    note = f"{files} contract file(s) in {len(runs)} run(s), {failed} failed; from {source}"
    result.checks.append(CheckSummary("contracts", status, files, note))


def run_gate(
    worktree: Path,
    report_dir: Path,
    file_prs: FilePRs | None = None,
    *,
    rules: RuleSet | None = None,
    on_step: StepCallback | None = None,
) -> GateResult:
    """Check ``worktree``; write ``gate.json`` and ``GATE.md`` into ``report_dir``; return the verdict.

    ``file_prs`` maps worktree-relative paths to the upstream PRs of the window that touched them.
    """
    worktree, report_dir = Path(worktree), Path(report_dir)
    if not worktree.is_dir():
        raise FileNotFoundError(f"worktree {worktree} does not exist; pass the sync branch's worktree")
    file_prs = file_prs or {}
    on_step = on_step or (lambda _step: None)
    config = load_gate_config(worktree)
    result = GateResult()
    on_step("static checks")
    run_static_checks(worktree, file_prs, config, result, rules)
    if config.static_mode == "regressions":
        from sync.gate.regression import keep_regressions

        keep_regressions(worktree, file_prs, result, rules, on_step)
    run_contracts(worktree, file_prs, config, result, on_step)
    write_report(result, report_dir)
    return result
