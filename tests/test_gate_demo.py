"""The gate on a sync branch of the embedded demo: upstream #116 makes the demo's reward plugin
return a dict, which breaks the reward contract; the gate fails and names #116 and the plugin file.
Real git repositories, the real translator and 3-way merge, the real contract run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sync.demo.build import build_demo
from sync.gate import run_gate
from sync.reports.context import ReportContext
from sync.window import run_window

PLUGIN = "vime_plugins/rollout/math_reward.py"


@pytest.fixture(scope="module")
def demo_sync(tmp_path_factory):
    repos = build_demo(tmp_path_factory.mktemp("demo"))
    result = run_window(repos.upstream, repos.downstream, repos.to_pr, repos.from_pr)
    context = ReportContext(result.window, result.branch, result.outcomes)
    file_prs = {outcome.path: context.prs_for(outcome) for outcome in result.outcomes}
    return result, file_prs


def test_gate_fails_on_the_demo_sync_branch_and_names_pr_116(demo_sync):
    window, file_prs = demo_sync
    assert file_prs[PLUGIN] == [116]
    gate = run_gate(window.worktree, window.report_dir, file_prs)
    assert not gate.passed
    contract = [f for f in gate.failures if f.check == "contract"]
    assert len(contract) == 1 and contract[0].prs == [116] and contract[0].files == [PLUGIN]
    assert "a reward must be a number" in contract[0].message
    # the unparseable upstream file (#121) is named too, and every failure names at least one PR
    assert any(f.check == "compile" and f.prs == [121] for f in gate.failures)
    assert 116 in gate.prs and all(f.prs for f in gate.failures)
    written = json.loads((window.report_dir / "gate.json").read_text())
    assert written["passed"] is False and 116 in written["prs"]
    assert "#116" in (window.report_dir / "GATE.md").read_text()


def test_reverting_the_plugin_change_clears_the_contract_failure(demo_sync, tmp_path):
    """Same branch with the plugin returning a number again: the contract passes (the failure was #116's)."""
    window, file_prs = demo_sync
    plugin = window.worktree / PLUGIN
    original = plugin.read_text()
    try:
        plugin.write_text(
            original.replace("-> dict:", "-> float:")
            .replace('return {"score": 0.0}', "return 0.0")
            .replace('return {"score": 1.0 if', "return (1.0 if")
            .replace("else 0.0}", "else 0.0)")
        )
        gate = run_gate(window.worktree, tmp_path / "report", file_prs)
        assert not [f for f in gate.failures if f.check == "contract"], [f.describe() for f in gate.failures]
        assert next(c for c in gate.checks if c.name == "contracts").status == "passed"
    finally:
        plugin.write_text(original)


def test_cli_reads_the_windows_decisions_for_the_pr_names(demo_sync):
    """`vime-sync gate --worktree W` alone: report folder and file→PR map come from the window's report."""
    window, _ = demo_sync
    done = subprocess.run(
        [sys.executable, "-m", "sync.cli", "gate", "--worktree", str(window.worktree)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    assert "(files: vime_plugins/rollout/math_reward.py; PRs: #116)" in done.stderr
    assert f"report: {window.report_dir / 'GATE.md'}" in done.stderr
