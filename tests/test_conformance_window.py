"""A window whose upstream PR adds a call the rules cannot make right: the conformance finding is a
Decide question in the review queue (with the rule and PR), the line is not counted converted,
and the question goes through resolve like any line question."""

from __future__ import annotations

import json

import pytest
from window_helpers import commit, init_repo

from sync.conformance.schema import ApiUnavailable, load_api
from sync.rules import load_rules
from sync.translate import translate_file
from sync.window import run_window
from sync.window.resolve import resolve_branch

ENGINE = "slime/backends/sglang_utils/sglang_engine.py"
BASE = 'class SGLangEngine:\n    def flush_cache(self):\n        return self._make_request("flush_cache")\n'
ADDED = (
    "\n    def update_weights_from_distributed(self, names, dtypes, shapes, group_name):\n"
    '        return self._make_request(\n            "update_weights_from_distributed",\n'
    '            {"names": names, "dtypes": dtypes, "shapes": shapes, "group_name": group_name},\n        )\n'
)


def test_finding_is_a_decide_question_and_resolves(tmp_path):
    try:
        load_api()
    except ApiUnavailable as error:
        pytest.skip(f"vLLM's API cannot be read here: {error}")
    up = init_repo(tmp_path / "slime")
    commit(up, "engine (#1)", {ENGINE: BASE})
    commit(up, "distributed update (#2)", {ENGINE: BASE + ADDED})
    rules = load_rules()
    base = translate_file(ENGINE, BASE.encode(), rules)
    down = init_repo(tmp_path / "vime")
    commit(down, "vime at #1", {base.dst_path: base.data})
    result = run_window(up, down, to_pr=2, from_pr=2)
    [question] = [q for q in result.questions if q.kind == "conformance"]
    assert question.tier == "Decide" and question.rules == ["ep.update_distributed"]
    assert "'group_name' in update_info" in question.summary and question.prs == [2]
    assert question.lines == [8, 8] and '"group_name": group_name' in question.sides["theirs"]
    summary = (result.report_dir / "SUMMARY.md").read_text()
    assert (
        "conformance findings (HTTP calls that do not match vLLM's API: questions, not conversions): 1"
        in summary
    )
    assert "not counting 1 on lines a conformance finding questions" in summary
    assert "`ep.update_distributed`" not in summary.split("| rule | applications |")[-1]  # not a conversion
    doc = json.loads((result.report_dir / "decisions.json").read_text())
    for q in doc["questions"]:
        if q["kind"] == "conformance":
            q["decision"] = "keep"
        elif q["tier"] == "Decide":
            q["decision"] = q["options"][0]
    (result.report_dir / "decisions.json").write_text(json.dumps(doc))
    resolve_branch(result.worktree, gate=None)


def test_a_plugin_importing_a_slime_module_vime_lacks_is_a_decide_question(tmp_path):
    """A window's PR adds a plugin import that maps to a vime module vime does not have: the
    translation's import finding is a Decide question naming the module, the rule and the PR."""
    plugin = "examples/agent/generate.py"
    up = init_repo(tmp_path / "slime")
    commit(up, "plugin (#1)", {plugin: "from slime.utils.types import Sample\n"})
    commit(up, "agent harness import (#2)", {plugin: "from slime.utils.types import Sample\nfrom slime.agent.harness import CodexHarness\n"})  # fmt: skip
    base = translate_file(plugin, b"from slime.utils.types import Sample\n", load_rules())
    down = init_repo(tmp_path / "vime")
    commit(down, "vime at #1", {base.dst_path: base.data})
    result = run_window(up, down, to_pr=2, from_pr=2)
    [question] = [q for q in result.questions if q.kind == "conformance"]
    assert question.tier == "Decide" and question.rules == ["mod.slime"] and question.prs == [2]
    assert "vime has no module vime.agent" in question.summary
    assert "(import; missing-module): the translated import names what vime does not have" in question.summary
    assert question.lines == [2, 2]
