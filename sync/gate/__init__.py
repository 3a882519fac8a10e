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
from sync.gate.contracts import INSTALL_ROOT, ContractSetupError, default_runs, framework_path, run_contract
from sync.gate.files import worktree_files
from sync.gate.report import render_markdown, write_report
from sync.gate.result import CheckSummary, FilePRs, GateFailure, GateResult
from sync.gate.static_checks import check_compiles, check_conflict_markers, check_sglang_imports
from sync.gate.vllm_flags import (
    VllmNotInstalled,
    check_vllm_flags,
    installed_vime_flags,
    own_vllm_flags,
    vllm_server_options,
)

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


def _load_rules(worktree: Path) -> RuleSet:
    from sync.rules import load_rules

    tables = worktree / "translations"
    return load_rules(tables) if any(tables.glob("*.toml")) else load_rules()


def run_static_checks(
    worktree: Path, file_prs: FilePRs, config: GateConfig, result: GateResult, rules: RuleSet | None = None
) -> None:
    files = worktree_files(worktree, config.exclude)
    py_files = [f for f in files if f.endswith(".py")]
    failures, trees = check_compiles(worktree, py_files, file_prs)
    result.failures += failures
    result.checks.append(CheckSummary("compile", "failed" if failures else "passed", len(py_files)))

    rules = rules if rules is not None else _load_rules(worktree)
    failures = check_sglang_imports(trees, rules, file_prs)
    result.failures += failures
    result.checks.append(CheckSummary("sglang-import", "failed" if failures else "passed", len(trees)))

    from sync.conformance.gate import check_conformance  # imports sync.gate's helpers: load it late

    failures, summary = check_conformance(worktree, list(trees), rules, file_prs)
    result.failures += failures
    result.checks.append(summary)

    scripts = [f for f in files if f.endswith(".sh")]
    try:
        options = vllm_server_options()
    except VllmNotInstalled as exc:
        result.checks.append(CheckSummary("vllm-flag", "skipped", 0, f"vLLM not installed ({exc})"))
    else:
        own = own_vllm_flags(trees)
        if framework_path(worktree)[1] is not None:  # plugins only: the installed framework's flags apply
            own |= installed_vime_flags(INSTALL_ROOT)
        failures = check_vllm_flags(worktree, scripts, own, file_prs, options)
        result.failures += failures
        result.checks.append(CheckSummary("vllm-flag", "failed" if failures else "passed", len(scripts)))

    failures = check_conflict_markers(worktree, files, file_prs)
    result.failures += failures
    result.checks.append(CheckSummary("conflict-marker", "failed" if failures else "passed", len(files)))


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
        try:
            failures, note = run_contract(worktree, run, file_prs)
        except ContractSetupError as exc:
            failures, note = [GateFailure(check="contract", message=str(exc), files=list(run.files))], None
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
