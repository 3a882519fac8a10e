"""The gate's static checks of a worktree: compile, SGLang imports, conformance, ``--vllm-*`` flags
in scripts, conflict markers. Apart from ``sync.gate`` so the regression mode can run them on
other revisions without importing the package that imports it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sync.gate.config import GateConfig
from sync.gate.contracts import INSTALL_ROOT, framework_path
from sync.gate.files import worktree_files
from sync.gate.static_checks import check_compiles, check_conflict_markers, check_sglang_imports
from sync.model.gate import CheckSummary, FilePRs, GateResult
from sync.translator.vllm_flags import (
    VllmNotInstalled,
    check_python_argument_flags,
    check_vllm_flags,
    installed_vime_flags,
    own_vllm_flags,
    vllm_server_options,
)

if TYPE_CHECKING:
    from sync.rules import RuleSet


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

    from sync.gate.conformance_check import check_conformance  # imports sync.gate's helpers: load it late

    failures, summary = check_conformance(worktree, list(trees), rules, file_prs)
    result.failures += failures
    result.checks.append(summary)

    from sync.gate.imports_check import check_vime_imports

    failures, summary = check_vime_imports(worktree, files, file_prs)
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
        failures = check_vllm_flags(worktree, scripts, own, file_prs, options, rules)
        failures += check_python_argument_flags(trees, rules, file_prs)
        result.failures += failures
        checked = len(scripts) + len(set(trees) & set(file_prs))
        result.checks.append(CheckSummary("vllm-flag", "failed" if failures else "passed", checked))

    failures = check_conflict_markers(worktree, files, file_prs)
    result.failures += failures
    result.checks.append(CheckSummary("conflict-marker", "failed" if failures else "passed", len(files)))
