"""Which conformance findings stop a sync for a person: one in a file the downstream runs at serve or
train time is a Decide question; one in an upstream test file (``.vime-sync/review.toml``
``[conformance] confirm_in``, by default ``tests/`` and ``test_*.py``) is a Confirm question with
"keep" proposed, still in QUESTIONS.md, decisions.json and ``status``; a committed review.toml turns it
off or moves it. Real git repositories, the real translator (an import finding needs no vLLM)."""

from __future__ import annotations

import json
import re

import pytest
from window_helpers import commit, git, init_repo

from sync.follow.run import FollowOptions, follow
from sync.model.errors import SyncError
from sync.reports.review_config import DEFAULT_CONFIRM_IN, ReviewConfig, parse_review_config
from sync.rules import load_rules
from sync.translate import translate_file
from sync.window import run_window
from sync.window.resolve import resolve_branch
from sync.window.status import sync_status

TEST_FILE = "tests/test_agent.py"
PLUGIN = "examples/agent/generate.py"
HEAD_LINE = "from slime.utils.types import Sample\n"
TEST_IMPORT = "from slime.agent.harness import CodexHarness\n"  # vime has no vime.agent
PLUGIN_IMPORT = "from slime.agent.tools import ToolBox\n"


def _repos(tmp_path, review_toml: str | None = None):
    """Upstream #1 has both files; #2 adds to each an import vime lacks. The downstream is
    translate(#1), with ``review_toml`` committed as .vime-sync/review.toml when given."""
    up = init_repo(tmp_path / "slime")
    commit(up, "files (#1)", {TEST_FILE: HEAD_LINE, PLUGIN: HEAD_LINE})
    commit(up, "agent imports (#2)", {TEST_FILE: HEAD_LINE + TEST_IMPORT, PLUGIN: HEAD_LINE + PLUGIN_IMPORT})
    return up, _downstream_at_one(tmp_path, review_toml)


def _downstream_at_one(tmp_path, review_toml: str | None = None):
    """translate(#1) of both files as a repository, with ``review_toml`` committed when given."""
    rules = load_rules()
    down = init_repo(tmp_path / "vime")
    files: dict[str, bytes | str | None] = {}
    for path in (TEST_FILE, PLUGIN):
        t = translate_file(path, HEAD_LINE.encode(), rules)
        files[t.dst_path] = t.data
    if review_toml is not None:
        files[".vime-sync/review.toml"] = review_toml
    commit(down, "vime at #1", files)
    return down


def _conformance(result) -> dict[str, object]:
    return {q.file: q for q in result.questions if q.kind == "conformance"}


def test_a_finding_in_a_test_file_is_confirm_keep_and_one_in_a_runtime_file_stays_decide(tmp_path):
    up, down = _repos(tmp_path)
    result = run_window(up, down, to_pr=2, from_pr=2)
    found = _conformance(result)
    assert sorted(found) == [PLUGIN, TEST_FILE]  # both findings are in the queue
    in_test, in_plugin = found[TEST_FILE], found[PLUGIN]
    assert (in_test.tier, in_test.default, in_test.prs) == ("Confirm", "keep", [2])
    assert "vime has no module vime.agent" in in_test.summary
    assert "proposed keep: the file matches 'tests/*' of [conformance] confirm_in" in in_test.summary
    assert (in_plugin.tier, in_plugin.default) == ("Decide", None)
    assert "proposed keep" not in in_plugin.summary

    questions_md = (result.report_dir / "QUESTIONS.md").read_text()
    assert TEST_FILE in questions_md and PLUGIN in questions_md
    doc = json.loads((result.report_dir / "decisions.json").read_text())
    assert {q["file"]: q["tier"] for q in doc["questions"] if q["kind"] == "conformance"} == {
        TEST_FILE: "Confirm",
        PLUGIN: "Decide",
    }
    status = sync_status(result.worktree)
    assert status.tiers["Confirm"] >= 1 and status.unanswered_decide == [in_plugin.id]

    for q in doc["questions"]:  # the reviewer answers the one Decide; the Confirm takes its default
        if q["tier"] == "Decide":
            q["decision"] = "keep"
    (result.report_dir / "decisions.json").write_text(json.dumps(doc))
    resolve_branch(result.worktree, gate=None)
    assert TEST_IMPORT.replace("slime", "vime") in (result.worktree / TEST_FILE).read_text()


def test_follow_goes_on_past_a_test_file_finding_and_stops_at_a_runtime_one(tmp_path):
    """#2 adds a finding in a test file only (mirrored with no person), #3 one in a plugin (stops)."""
    up = init_repo(tmp_path / "slime")
    commit(up, "files (#1)", {TEST_FILE: HEAD_LINE, PLUGIN: HEAD_LINE})
    commit(up, "test import (#2)", {TEST_FILE: HEAD_LINE + TEST_IMPORT})
    commit(up, "plugin import (#3)", {PLUGIN: HEAD_LINE + PLUGIN_IMPORT})
    down = _downstream_at_one(tmp_path)
    result = follow(up, down, FollowOptions(from_pr=2, gate=False))
    assert [(o.label, o.summary.person) for o in result.steps] == [("#2", False), ("#3", True)]
    first = result.steps[0].summary
    assert (first.decide, first.confirm) == (0, 1)  # counted in the ledger, not asked
    assert result.stop and result.stop.startswith("#3 needs a person: 1 Decide question(s) open")
    assert TEST_IMPORT.replace("slime", "vime") in (result.worktree / TEST_FILE).read_text()


def test_a_default_kept_in_a_test_file_never_settles_the_same_finding_in_a_runtime_file(tmp_path):
    """#2's test file and #3's plugin add the very same import vime lacks: #2's finding is proposed
    keep and recorded when follow resolves it; #3's is still asked, not Settled by that default."""
    up = init_repo(tmp_path / "slime")
    commit(up, "files (#1)", {TEST_FILE: HEAD_LINE, PLUGIN: HEAD_LINE})
    commit(up, "test import (#2)", {TEST_FILE: HEAD_LINE + TEST_IMPORT})
    commit(up, "the same import in the plugin (#3)", {PLUGIN: HEAD_LINE + TEST_IMPORT})
    down = _downstream_at_one(tmp_path)
    result = follow(up, down, FollowOptions(from_pr=2, gate=False))
    assert [(o.label, o.summary.person) for o in result.steps] == [("#2", False), ("#3", True)]
    third = result.steps[1].summary
    assert (third.decide, third.settled) == (1, 0)


def test_review_toml_turns_the_rule_off_or_moves_it(tmp_path):
    off_up, off_down = _repos(tmp_path / "off", "[conformance]\nconfirm_in = []\n")
    found = _conformance(run_window(off_up, off_down, to_pr=2, from_pr=2))
    assert {f: q.tier for f, q in found.items()} == {TEST_FILE: "Decide", PLUGIN: "Decide"}

    moved_up, moved_down = _repos(tmp_path / "moved", '[conformance]\nconfirm_in = ["examples/*"]\n')
    found = _conformance(run_window(moved_up, moved_down, to_pr=2, from_pr=2))
    assert {f: q.tier for f, q in found.items()} == {TEST_FILE: "Decide", PLUGIN: "Confirm"}
    assert "'examples/*' of [conformance] confirm_in (.vime-sync/review.toml)" in found[PLUGIN].summary


def test_a_broken_review_toml_is_one_line_and_leaves_no_branch(tmp_path):
    up, down = _repos(tmp_path, '[conformance]\nconfirm_in = "tests/*"\n')
    before = git(down, "for-each-ref", "--format=%(refname)")
    with pytest.raises(
        SyncError, match=r"\.vime-sync/review\.toml: \[conformance\] confirm_in must be a list"
    ):
        run_window(up, down, to_pr=2, from_pr=2)
    assert git(down, "for-each-ref", "--format=%(refname)") == before  # nothing half-made


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[conformance\n", "not valid TOML"),
        ("[gate]\n", "unknown table [gate]"),
        ("[conformance]\nconfirm = []\n", "has no setting 'confirm'"),
        ("conformance = 1\n", "conformance must be a table"),
        ('[conformance]\nconfirm_in = ["tests/*", 3]\n', "must be a list of glob strings"),
    ],
)
def test_bad_settings_are_refused_naming_the_entry(text, message):
    with pytest.raises(SyncError, match=re.escape(message)):
        parse_review_config(text, ".vime-sync/review.toml")


def test_default_globs_match_test_files_only():
    config = parse_review_config("", ".vime-sync/review.toml")
    assert config.conformance_confirm_in == DEFAULT_CONFIRM_IN == ReviewConfig().conformance_confirm_in
    tests = ["tests/test_hf_to_megatron.py", "tests/utils/test_vllm_config.py", "vime/x/tests/a.py",
             "test_top.py", "tools/test_convert.py", "tests/conftest.py"]  # fmt: skip
    runtime = ["vime/backends/megatron_utils/server/megatron_server.py", "train.py",
               "tools/convert_hf_to_fp8.py", "vime_plugins/models/glm5/glm5.py", "examples/latest_test.py"]  # fmt: skip
    assert [p for p in tests if config.confirm_glob(p) is None] == []
    assert [p for p in runtime if config.confirm_glob(p) is not None] == []
