"""`vime-sync resolve` ends by running the real gate (sync.gate); `status` reads its gate.json.
Window via the stand-in translator; the upstream file that fails to parse must fail the gate by name."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner
from window_helpers import FakeRules, build_scenario, fake_translate, git

from sync.cli import app
from sync.window import run_window


@pytest.mark.slow
def test_resolve_runs_gate_and_status_reports_it(tmp_path):
    sc = build_scenario(tmp_path)
    result = run_window(
        sc.upstream, sc.downstream, to_pr=14, from_pr=11, rules=FakeRules(), translate_fn=fake_translate
    )
    path = result.report_dir / "decisions.json"
    doc = json.loads(path.read_text())
    for q in doc["questions"]:
        if q["tier"] == "Decide":
            q["decision"] = "theirs"
    path.write_text(json.dumps(doc))
    runner = CliRunner()
    out = runner.invoke(app, ["resolve", "--worktree", str(result.worktree)])
    assert out.exit_code == 1 and "gate failed" in out.output  # vime/broken.py does not compile
    subjects = git(result.worktree, "log", "--format=%s", "-n", "3").splitlines()
    assert subjects[:2] == ["sync: gate failed", "sync(slime #11..#14): resolve"]
    gate = json.loads((result.report_dir / "gate.json").read_text())
    assert gate["passed"] is False
    compile_failures = [f for f in gate["failures"] if f["check"] == "compile"]
    assert [f["files"] for f in compile_failures] == [["vime/broken.py"]] and compile_failures[0]["prs"] == [
        14
    ]
    assert git(result.worktree, "status", "--porcelain") == ""
    status = runner.invoke(app, ["status", "--worktree", str(result.worktree)])
    assert status.exit_code == 0 and "failed" in status.output and "vime/broken.py" in status.output
