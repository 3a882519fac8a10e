"""A review queue a person clears quickly, on small real git histories (stand-in translator
from window_helpers for the merge machinery; the real gate checks and real git throughout).

Grouped questions and per-site decisions, per-hunk provenance across several PRs touching one file,
the regression-only gate naming the PR by bisection, the ledger across two windows, owned / mapped /
ignored / never-present paths, and windows given by commit."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner
from window_helpers import FakeRules, commit, fake_translate, git, init_repo

from sync.cli import app
from sync.gate import GateConfigError, GateResult, run_static_checks
from sync.gate.config import load_gate_config
from sync.gate.regression import keep_regressions, regression_gate
from sync.ledger import fill_downstream, load_ledger, where_is
from sync.window import SyncError, run_window
from sync.window.history import WindowError, window_by_commit
from sync.window.resolve import resolve_branch

LONG = "".join(f"V{i} = {i}\n" for i in range(1, 31))  # 30 lines: far-apart edits merge as separate hunks


def _pair(root: Path, base: dict[str, str], edits: dict[str, str | None] | None = None) -> tuple[Path, Path]:
    """Upstream with ``base`` at PR #1; downstream = its fake translation (+ ``edits``)."""
    up = init_repo(root / "up")
    commit(up, "base (#1)", base)
    down = init_repo(root / "down")
    files = {}
    for rel, text in base.items():
        t = fake_translate(rel, text.encode(), FakeRules())
        if t.dst_path:
            files[t.dst_path] = t.data
    commit(down, "vime at slime #1", files)
    if edits:
        commit(down, "vime edits", edits)
    return up, down


def _window(up: Path, down: Path, to_pr: int, from_pr: int | None = None, **kw):
    return run_window(
        up, down, to_pr=to_pr, from_pr=from_pr, rules=FakeRules(), translate_fn=fake_translate, **kw
    )


def _answer(result, fn) -> None:
    path = result.report_dir / "decisions.json"
    doc = json.loads(path.read_text())
    for q in doc["questions"]:
        fn(q)
    path.write_text(json.dumps(doc, indent=2))


def _merge(down: Path, result) -> None:
    git(down, "worktree", "remove", "--force", str(result.worktree))
    git(down, "merge", "-q", "--no-ff", "-m", f"merge {result.branch}", result.branch)


# --- grouping and per-site decisions -------------------------------------------------------------


def test_one_question_per_rule_and_reference_with_every_site_and_per_site_decisions(tmp_path):
    up, down = _pair(tmp_path, {"slime/a.py": "A = 1\n", "slime/b.py": "B = 1\n"})
    commit(up, "weights (#2)", {"slime/a.py": "A = 1\nW = pull_weights()\nK = sgl_kernel.op\n"})
    commit(up, "more weights (#3)", {"slime/b.py": "B = 1\nW2 = pull_weights(2)\nW3 = pull_weights(3)\n"})
    result = _window(up, down, 3, 2)
    kinds = [q.kind for q in result.questions]
    assert kinds == ["unsupported", "unmapped"]  # 3 hits and 1 reference: 2 questions, not 4
    hits = result.questions[0]
    assert [(s["file"], s["lines"][0], s["prs"]) for s in hits.sites] == [
        ("vime/a.py", 2, [2]), ("vime/b.py", 2, [3]), ("vime/b.py", 3, [3]),
    ]  # fmt: skip
    assert hits.prs == [2, 3] and hits.default == "keep" and hits.tier == "Confirm"
    text = (result.report_dir / "QUESTIONS.md").read_text()
    assert "`vime/b.py:3` (#3)" in text and "3 sites in 2 files" in text

    # the group's default applies to all sites, one site gets its own edit
    def answer(q):
        if q["kind"] == "unsupported":
            q["sites"][1]["decision"], q["sites"][1]["edit"] = "edit", "W2 = None  # ported by hand"

    _answer(result, answer)
    resolve_branch(result.worktree)
    wt = result.worktree
    assert (wt / "vime/b.py").read_text() == "B = 1\nW2 = None  # ported by hand\nW3 = pull_weights(3)\n"
    assert (wt / "vime/a.py").read_text() == "A = 1\nW = pull_weights()\nK = sgl_kernel.op\n"
    recorded = json.loads((wt / ".vime-sync/decisions.json").read_text())["decisions"]
    assert sorted(r["decision"] for r in recorded.values()) == ["edit", "keep", "keep", "keep"]  # per site

    # next window: the same hit in another file is settled per site; a new one keeps the group open
    _merge(down, result)
    commit(up, "copy (#4)", {"slime/c.py": "W = pull_weights()\nW4 = pull_weights(4)\n"})
    second = _window(up, down, 4)
    [group] = second.questions
    assert [s.get("recorded_in") for s in group.sites] == ["2-3", None]
    assert group.tier == "Confirm" and "1 of 2 sites already have a recorded decision" in group.summary


def test_a_group_whose_every_site_is_recorded_is_settled(tmp_path):
    up, down = _pair(tmp_path, {"slime/a.py": "A = 1\n"})
    commit(up, "w (#2)", {"slime/a.py": "A = 1\nW = pull_weights()\n"})
    first = _window(up, down, 2, 2)
    resolve_branch(first.worktree)
    _merge(down, first)
    commit(up, "w again (#3)", {"slime/z.py": "W = pull_weights()\n"})
    [q] = _window(up, down, 3).questions
    assert q.tier == "Settled" and q.decision == "keep"


# --- per-hunk provenance ---------------------------------------------------------------------------


def test_each_conflict_hunk_names_the_prs_behind_it_not_the_files(tmp_path):
    up, down = _pair(
        tmp_path,
        {"slime/m.py": LONG},
        {"vime/m.py": LONG.replace("V5 = 5", "V5 = 'vime'").replace("V25 = 25", "V25 = 'vime'")},
    )
    commit(up, "top (#2)", {"slime/m.py": LONG.replace("V5 = 5", "V5 = 'up'")})
    commit(
        up,
        "middle (#3)",
        {"slime/m.py": LONG.replace("V5 = 5", "V5 = 'up'").replace("V15 = 15", "V15 = 'up'")},
    )
    commit(up, "bottom (#4)", {"slime/m.py": LONG.replace("V5 = 5", "V5 = 'up'").replace("V15 = 15", "V15 = 'up'")
                               .replace("V25 = 25", "V25 = 'up'")})  # fmt: skip
    result = _window(up, down, 4, 2)
    hunks = [q for q in result.questions if q.kind == "conflict"]
    assert [(q.sides["theirs"], q.prs) for q in hunks] == [("V5 = 'up'\n", [2]), ("V25 = 'up'\n", [4])]
    doc = json.loads((result.report_dir / "decisions.json").read_text())
    assert doc["files"]["vime/m.py"]["prs"] == [2, 3, 4]  # the file: every PR; the hunks: their own
    regions = doc["files"]["vime/m.py"]["regions"]
    assert {"lines": [15, 15], "prs": [3]} in regions
    ledger = {r.pr: r.disposition for r in load_ledger(result.worktree)}
    assert ledger == {2: "review", 3: "mirrored", 4: "review"}  # #3's change merged cleanly
    page = (result.report_dir / "review.html").read_text()
    assert '"prs": [4]' in page or '"prs":[4]' in page


def test_a_hunk_where_upstream_deleted_lines_names_the_deleting_pr(tmp_path):
    up, down = _pair(tmp_path, {"slime/m.py": LONG}, {"vime/m.py": LONG.replace("V20 = 20", "V20 = 'vime'")})
    commit(up, "unrelated (#2)", {"slime/m.py": LONG.replace("V2 = 2", "V2 = 'up'")})
    commit(up, "drop (#3)", {"slime/m.py": LONG.replace("V2 = 2", "V2 = 'up'").replace("V20 = 20\n", "")})
    [q] = [q for q in _window(up, down, 3, 2).questions if q.kind == "conflict"]
    assert q.sides["theirs"] == "" and q.prs == [3]


# --- the regression-only gate ----------------------------------------------------------------------


def test_regression_gate_reports_new_fixed_and_preexisting_and_bisects_the_pr(tmp_path):
    base = {"slime/ok.py": "OK = 1\n", "slime/old_bad.py": "def old(:\n", "slime/fix_me.py": "def f(:\n"}
    up, down = _pair(tmp_path, base)
    commit(up, "fine, and moves an old failure down a line (#2)", {"slime/ok.py": "OK = 2\n",
                                                                 "slime/old_bad.py": "X = 1\ndef old(:\n"})  # fmt: skip
    commit(up, "breaks (#3)", {"slime/new.py": "def broken(:\n    pass\n"})
    commit(up, "fixes (#4)", {"slime/fix_me.py": "def f():\n    pass\n"})
    commit(up, "fine again (#5)", {"slime/ok.py": "OK = 3\n"})
    result = _window(up, down, 5, 2, per_pr=True)
    resolve_branch(result.worktree)
    r = regression_gate(result.worktree, file_prs=result.window.prs_by_file())
    assert [(f.check, f.files, f.prs) for f in r.new] == [("compile", ["vime/new.py"], [3])]
    assert [f.files for f in r.fixed] == [["vime/fix_me.py"]]
    assert [f.files for f in r.preexisting] == [["vime/old_bad.py"]]
    assert not r.passed and r.probes <= 2 + 3  # before, after, and a bisection over 4 steps

    # the same as a gate mode (.vime-sync/gate.toml [static] mode = "regressions"), as resolve's gate runs it
    static = GateResult()
    run_static_checks(result.worktree, {}, load_gate_config(result.worktree), static)
    assert len(static.failures) == 2  # the plain checks: old_bad.py and new.py
    keep_regressions(result.worktree, result.window.prs_by_file(), static)
    assert [(f.files, f.prs) for f in static.failures] == [(["vime/new.py"], [3])]
    assert "1 pre-existing not counted" in next(c.note for c in static.checks if c.name == "compile")
    (result.worktree / ".vime-sync").mkdir(exist_ok=True)
    (result.worktree / ".vime-sync/gate.toml").write_text('[static]\nmode = "everything"\n')
    with pytest.raises(GateConfigError, match='mode must be "all" or "regressions"'):
        load_gate_config(result.worktree)
    (result.worktree / ".vime-sync/gate.toml").unlink()

    runner = CliRunner()
    out = runner.invoke(app, ["gate", "--worktree", str(result.worktree), "--regressions"])
    assert out.exit_code == 1, out.output
    assert "1 new, 1 fixed, 1 pre-existing" in out.output
    md = (result.report_dir / "GATE.md").read_text()
    assert "PR: #3" in md and "Pre-existing" in md


def test_regression_gate_passes_when_only_old_failures_remain(tmp_path):
    up, down = _pair(tmp_path, {"slime/old_bad.py": "def old(:\n", "slime/ok.py": "OK = 1\n"})
    commit(up, "fine (#2)", {"slime/ok.py": "OK = 2\n"})
    result = _window(up, down, 2, 2)
    resolve_branch(result.worktree)
    r = regression_gate(result.worktree)
    assert r.passed and len(r.preexisting) == 1 and "no --per-pr commits" in r.notes[-1]
    assert "contracts not compared" in r.notes[0]  # nothing of this tree is a hook they could test


REWARD_PLUGIN = "vime_plugins/rollout/math_reward.py"
GOOD_REWARD = "async def reward_func(args, sample, **kwargs) -> float:\n    return 1.0\n"
DICT_REWARD = "async def reward_func(args, sample, **kwargs) -> dict:\n    return {'score': 1.0}\n"
REWARD_CONTRACT = (
    '[[contract]]\nfile = "tests/contract/test_reward_contract.py"\n'
    'args = ["--custom-rm-path", "vime_plugins.rollout.math_reward.reward_func"]\n'
    '[[contract]]\nfile = "tests/contract/test_buffer_filter_contract.py"\n'
    'args = ["--buffer-filter-path", "vime_plugins.buffer.pop_none"]\n'
)
PLUGIN_BASE = {
    "vime_plugins/__init__.py": "",
    "vime_plugins/rollout/__init__.py": "",
    REWARD_PLUGIN: GOOD_REWARD,
    # broken before the window: a buffer filter that returns nothing (pre-existing, not counted)
    "vime_plugins/buffer.py": "def pop_none(args, rollout_id, buffer, num_samples):\n    return None\n",
}


def test_regression_gate_bisects_a_broken_contract_to_its_pr(tmp_path):
    """The hook contracts of the downstream's gate.toml run before and after the window too: the
    reward function that PR #3 breaks is named with #3; the buffer filter broken before is not counted."""
    up, down = _pair(tmp_path, PLUGIN_BASE, {".vime-sync/gate.toml": REWARD_CONTRACT})
    commit(up, "fine (#2)", {"vime_plugins/__init__.py": "VERSION = 2\n"})
    commit(up, "reward returns a dict (#3)", {REWARD_PLUGIN: DICT_REWARD})
    commit(up, "fine again (#4)", {"vime_plugins/__init__.py": "VERSION = 4\n"})
    result = _window(up, down, 4, 2, per_pr=True)
    resolve_branch(result.worktree)

    r = regression_gate(result.worktree, file_prs=result.window.prs_by_file())
    assert [(f.check, f.files, f.prs) for f in r.new] == [("contract", [REWARD_PLUGIN], [3])]
    assert "reward is a dict" in r.new[0].message and str(tmp_path) not in r.new[0].message
    assert r.preexisting and {(f.check, *f.files) for f in r.preexisting} == {
        ("contract", "vime_plugins/buffer.py")
    }
    assert not r.fixed and r.probes <= 2 + 3  # before, after, and a bisection over 3 steps

    static_only = regression_gate(result.worktree, contracts=False)
    assert static_only.passed and not static_only.preexisting

    out = CliRunner().invoke(app, ["gate", "--worktree", str(result.worktree), "--regressions"])
    assert out.exit_code == 1 and f"1 new, 0 fixed, {len(r.preexisting)} pre-existing" in out.output, (
        out.output
    )
    assert "PR: #3" in (result.report_dir / "GATE.md").read_text()
    out = CliRunner().invoke(
        app, ["gate", "--worktree", str(result.worktree), "--regressions", "--static-only"]
    )
    assert out.exit_code == 0, out.output


# --- the ledger ------------------------------------------------------------------------------------


def test_ledger_across_two_windows_and_where_is_pr(tmp_path):
    up, down = _pair(tmp_path, {"slime/a.py": "A = 1\n", ".github/ci.yml": "on: push\n"})
    commit(up, "feature (#2)", {"slime/a.py": "A = 2\n"})
    commit(up, "ci only (#3)", {".github/ci.yml": "on: [push]\n"})
    commit(up, "direct push", {"slime/b.py": "B = 1\n"})
    first = _window(up, down, 3, 2)
    resolve_branch(first.worktree)
    _merge(down, first)
    commit(up, "later (#5)", {"slime/a.py": "A = 3\n"})
    commit(up, "noop (#4)", {"slime/a.py": "A = 3\n"})
    second = _window(up, down, 4, per_pr=True)
    rows = fill_downstream(second.worktree, load_ledger(second.worktree))
    assert [(r.label, r.window, r.disposition) for r in rows] == [
        ("#2", "slime-2-3", "mirrored"), ("#3", "slime-2-3", "not_mirrored"),
        (rows[2].sha[:8], "slime-4-4", "mirrored"), ("#5", "slime-4-4", "mirrored"), ("#4", "slime-4-4", "empty"),
    ]  # fmt: skip
    assert rows[0].downstream == first.commits[0]  # commit 1 of window 1 took it
    assert rows[3].downstream == second.commits[1]  # its per-PR commit (step 2, after the direct push)
    ledger_text = (second.worktree / ".vime-sync/ledger").read_text()
    assert len(ledger_text.splitlines()) == 1 + 5 and "\t" in ledger_text
    assert "## slime-4-4" in (second.worktree / ".vime-sync/LEDGER.md").read_text()
    assert "window slime-2-3, not_mirrored" in where_is(rows, 3)

    runner = CliRunner()
    out = runner.invoke(app, ["ledger", "--downstream", str(second.worktree), "--pr", "5"])
    assert out.exit_code == 0 and "window slime-4-4, mirrored" in out.output
    out = runner.invoke(app, ["ledger", "--downstream", str(second.worktree), "--pr", "99"])
    assert out.exit_code == 1 and "in no synced window" in out.output
    commit(up, "not synced yet (#6)", {"slime/a.py": "A = 6\n"})
    out = runner.invoke(
        app, ["ledger", "--downstream", str(second.worktree), "--pr", "6", "--upstream", str(up)]
    )
    assert out.exit_code == 1 and "after the last synced window" in out.output
    out = runner.invoke(
        app, ["ledger", "--downstream", str(second.worktree), "--pr", "99", "--upstream", str(up)]
    )
    assert "not merged on the upstream's first-parent history" in out.output
    out = runner.invoke(app, ["ledger", "--downstream", str(second.worktree), "--mark", "3", "--disposition",
                              "excluded", "--reason", "CI is ours"])  # fmt: skip
    assert out.exit_code == 0
    assert "excluded\t" in (second.worktree / ".vime-sync/ledger").read_text()


# --- layout: owned, mapped, ignored and never-present paths -----------------------------------------

LAYOUT = """kind = "layout"
[paths]
"slime/own.py" = "owned"
"slime/moved.py" = "vime/elsewhere.py"
"docs/zh/" = "ignore"
"""


def test_owned_never_present_mapped_and_ignored_paths(tmp_path):
    base = {
        "slime/own.py": "O = 1\n",
        "slime/moved.py": "M = 1\n",
        "slime/gone.py": "G = 1\n",
        "docs/zh/a.md": "zh\n",
    }
    up, down = _pair(tmp_path, base)
    git(down, "mv", "vime/moved.py", "vime/elsewhere.py")
    commit(down, "vime layout", {"translations/layout.toml": LAYOUT, "vime/own.py": "O = 'vime own'\n",
                                 "vime/gone.py": None})  # fmt: skip
    commit(up, "changes (#2)", {"slime/own.py": "O = 2\n", "slime/moved.py": "M = 2\n", "docs/zh/a.md": "zh 2\n",
                                "slime/never.py": "N = 1\n"})  # fmt: skip
    commit(up, "touch a file vime deleted (#3)", {"slime/gone.py": "G = 2\n"})
    result = _window(up, down, 3, 2)
    by_path = {o.path: o.outcome for o in result.outcomes}
    assert by_path["vime/own.py"] == "port"  # owned: nothing lands
    assert by_path["vime/elsewhere.py"] == "theirs"  # mapped: merged at the downstream's path
    assert by_path["docs/zh/a.md"] == "not_mirrored"
    assert by_path["vime/never.py"] == "new"  # added upstream: new, as before
    assert by_path["vime/gone.py"] == "modify_delete"  # deleted by the downstream on purpose: asked as before
    wt = result.worktree
    assert (wt / "vime/own.py").read_text() == "O = 'vime own'\n" and (
        wt / "vime/elsewhere.py"
    ).read_text() == "M = 2\n"
    ports = [q for q in result.questions if q.kind == "port"]
    assert [q.file for q in ports] == ["vime/own.py"]
    diff = (result.report_dir / "ports/slime/own.py.diff").read_text()
    assert "-O = 1\n+O = 2\n" in diff and ports[0].default == "ours" and ports[0].tier == "Confirm"
    _answer(result, lambda q: q.update(decision="theirs") if q["kind"] == "port" else None)
    resolve_branch(wt)
    assert (wt / "vime/own.py").read_text() == "O = 2\n"  # adopted on request


def test_a_change_to_a_file_the_downstream_never_had_is_a_port_request(tmp_path):
    up = init_repo(tmp_path / "up")
    commit(up, "base (#1)", {"slime/a.py": "A = 1\n", "slime/theirs_only.py": "T = 1\n"})
    down = init_repo(tmp_path / "down")
    commit(down, "a vime made by hand", {"vime/a.py": "A = 1\n"})
    commit(up, "change (#2)", {"slime/theirs_only.py": "T = 2\n"})
    result = _window(up, down, 2, 2)
    [out] = result.outcomes
    assert out.outcome == "port" and not (result.worktree / "vime/theirs_only.py").exists()
    assert [q.kind for q in result.questions] == ["port"]


def test_layout_default_port_lands_nothing(tmp_path):
    up, down = _pair(tmp_path, {"slime/a.py": "A = 1\n"})
    commit(down, "layout", {"translations/layout.toml": 'kind = "layout"\ndefault = "port"\n'})
    commit(up, "change and add (#2)", {"slime/a.py": "A = 2\n", "slime/b.py": "B = 1\n"})
    result = _window(up, down, 2, 2)
    assert sorted(o.outcome for o in result.outcomes) == ["port", "port"]
    assert git(result.worktree, "diff", "--stat", "HEAD~1", "--", "vime") == ""


GROUP_LAYOUT = """kind = "layout"
default = "port"
[paths]
"slime/engine/" = { port = "vime/engine/" }
"slime/single.py" = { port = "vime/single.py" }
"""


def test_port_requests_are_asked_once_per_layout_entry_or_folder_and_answered_per_file(tmp_path):
    """Three files under one layout folder entry and two in one unlisted folder: two questions,
    not five; a file-level answer overrides its group's; a file alone keeps its own question."""
    base = {"slime/engine/a.py": "A = 1\n", "slime/engine/b.py": "B = 1\n", "slime/engine/c.py": "C = 1\n",
            "slime/agent/x.py": "X = 1\n", "slime/agent/y.py": "Y = 1\n", "slime/single.py": "S = 1\n"}  # fmt: skip
    up, down = _pair(tmp_path, base)
    commit(down, "vime layout", {"translations/layout.toml": GROUP_LAYOUT})
    commit(up, "engine (#2)", {"slime/engine/a.py": "A = 2\n", "slime/engine/b.py": "B = 2\n"})
    commit(up, "engine and agent (#3)", {"slime/engine/c.py": None, "slime/agent/x.py": "X = 2\n",
                                         "slime/agent/y.py": "Y = 2\n", "slime/single.py": "S = 2\n"})  # fmt: skip
    result = _window(up, down, 3, 2)
    assert sorted(o.outcome for o in result.outcomes) == ["port"] * 6
    ports = [q for q in result.questions if q.kind == "port"]
    assert [(q.file, len(q.sites)) for q in ports] == [("vime/single.py", 0), ("vime/agent/x.py", 2),
                                                       ("vime/engine/a.py", 3)]  # fmt: skip
    engine = ports[2]
    assert engine.prs == [2, 3] and [s["prs"] for s in engine.sites] == [[2], [2], [3]]
    assert [s["snippet"] for s in engine.sites] == ["slime/engine/a.py: +1 -1 lines", "slime/engine/b.py: +1 -1 lines",
                                                    "slime/engine/c.py: deleted upstream"]  # fmt: skip
    assert "3 upstream files under slime/engine/" in engine.summary and engine.default == "ours"
    for (
        site
    ) in engine.sites:  # every file's diff is beside the report, the upstream version where there is one
        assert "+" in (result.report_dir / site["diff"]).read_text() or site["alternative"] is None
    assert (result.report_dir / "alternatives/slime/engine/a.py").read_text() == "A = 2\n"
    assert "`vime/engine/b.py` (#2)" in (result.report_dir / "QUESTIONS.md").read_text()

    def answer(q):  # the engine group: adopt upstream, except b.py, which vime ports by hand
        if q["kind"] == "port" and q["sites"] and q["file"] == "vime/engine/a.py":
            q["decision"] = "theirs"
            q["sites"][1]["decision"] = "ours"

    _answer(result, answer)
    wt = result.worktree
    resolve_branch(wt)
    assert (wt / "vime/engine/a.py").read_text() == "A = 2\n"  # adopted with its group
    assert (wt / "vime/engine/b.py").read_text() == "B = 1\n"  # its own answer: ported by hand
    assert not (wt / "vime/engine/c.py").exists()  # the group adopted upstream's deletion
    assert (wt / "vime/agent/x.py").read_text() == "X = 1\n"  # the default: nothing lands


def test_a_bad_layout_is_one_clear_error_and_changes_nothing(tmp_path):
    up, down = _pair(tmp_path, {"slime/a.py": "A = 1\n"})
    commit(down, "layout", {"translations/layout.toml": 'kind = "layout"\n[paths]\n"slime/a.py" = 3\n'})
    commit(up, "change (#2)", {"slime/a.py": "A = 2\n"})
    with pytest.raises((SyncError, ValueError), match=r"layout.toml: \[paths\] 'slime/a.py' must be"):
        _window(up, down, 2, 2)
    assert git(down, "branch", "--list", "sync/*") == ""


# --- windows by commit -----------------------------------------------------------------------------


def test_window_by_commit_when_pr_numbers_do_not_follow_merge_order(tmp_path):
    up, down = _pair(tmp_path, {"slime/a.py": "A = 1\n"})
    first = commit(up, "late number (#9)", {"slime/a.py": "A = 2\n"})
    commit(up, "direct push", {"slime/b.py": "B = 1\n"})
    tip = commit(up, "early number (#5)", {"slime/a.py": "A = 3\n"})
    commit(up, "after (#10)", {"slime/a.py": "A = 4\n"})
    to_pr, from_pr, cutoff = window_by_commit(up, tip, first)
    assert (to_pr, from_pr) == (5, 2) and cutoff == git(up, "rev-parse", f"{first}~1")
    result = _window(up, down, to_pr, from_pr, cutoff=cutoff)
    assert [c.pr for c in result.window.commits] == [9, None, 5]
    assert (result.worktree / "vime/a.py").read_text() == "A = 3\n"
    with pytest.raises(WindowError, match="carries no PR number"):
        window_by_commit(up, f"{tip}~1")
    with pytest.raises(WindowError, match="is not a commit"):
        window_by_commit(up, "deadbeef" * 5)


def test_window_cli_by_commit_refuses_mixed_forms_in_one_line(tmp_path):
    up, down = _pair(tmp_path, {"slime/a.py": "A = 1\n"})
    tip = commit(up, "x (#2)", {"slime/a.py": "A = 2\n"})
    runner = CliRunner()
    args = ["window", "--upstream", str(up), "--downstream", str(down)]
    out = runner.invoke(app, [*args, "--to", "2", "--to-commit", tip])
    assert out.exit_code == 1 and "not both" in out.output and "Traceback" not in out.output
    out = runner.invoke(app, [*args, "--to-commit", "nope"])
    assert out.exit_code == 1 and "--to-commit 'nope' is not a commit" in out.output
    assert (
        subprocess.run(["git", "-C", str(down), "branch", "--list", "sync/*"], capture_output=True).stdout
        == b""
    )


def test_unmapped_sites_group_by_the_reference_they_name():
    from sync.reports.questions import reference_of

    assert reference_of("from sglang.srt.layers import deep_gemm_wrapper") == "sglang.srt.layers"
    assert reference_of('    "sglang.srt.layers",') == "sglang.srt.layers"
    assert reference_of("quantize=sglang_per_token_group_quant_fp8,") == "sglang_per_token_group_quant_fp8"
    assert reference_of("from sglang.srt.server_args import ServerArgs") != "sglang.srt.layers"


def test_failures_compare_without_line_numbers_and_layout_targets():
    from sync.gate.regression import keyed
    from sync.layout import parse_layout
    from sync.model.gate import GateFailure

    def imp(line: int) -> GateFailure:
        return GateFailure(
            "sglang-import",
            f"vime/x.py:{line} imports sglang.srt.a and no keep rule covers it",
            ["vime/x.py"],
        )

    assert keyed([imp(40)]).keys() == keyed([imp(42)]).keys()  # shifted, still the same failure
    assert len(keyed([imp(40), imp(50)])) == 2  # twice in a file stays twice
    # a contract run is attributed to the Python files each tree changed: the same error is one failure
    broken = "test_reward_contract.py: ImportError: cannot import name 'X' from 'vime.utils.misc'"
    before = GateFailure("contract", broken, ["vime/rollout/a.py"])
    after = GateFailure("contract", broken, ["vime/rollout/a.py", "vime/rollout/b.py"])
    assert keyed([before]).keys() == keyed([after]).keys()
    assert (
        keyed([before]).keys() != keyed([GateFailure("contract", broken + "!", ["vime/rollout/a.py"])]).keys()
    )
    layout = parse_layout('kind = "layout"\n[paths]\n"slime/u.py" = { port = "vime/algorithms/" }\n'
                          '"slime/d/" = { port = "vime/e/" }\n"slime/*.md" = "ignore"\n')  # fmt: skip
    assert layout.place("slime/u.py").to == "vime/algorithms/u.py"
    assert layout.place("slime/d/x/y.py").to == "vime/e/x/y.py"
    assert layout.place("slime/a.md").action == "ignore" and layout.place("other.py").action == "mirror"


def test_an_owned_file_deleted_upstream_is_a_port_request_and_theirs_deletes_it(tmp_path):
    up, down = _pair(tmp_path, {"slime/own.py": "O = 1\n", "slime/a.py": "A = 1\n"})
    commit(
        down, "layout", {"translations/layout.toml": 'kind = "layout"\n[paths]\n"slime/own.py" = "owned"\n'}
    )
    commit(up, "drop (#2)", {"slime/own.py": None})
    result = _window(up, down, 2, 2)
    [q] = result.questions
    assert q.kind == "port" and q.alternative is None and "deletion" in q.summary
    assert (result.worktree / "vime/own.py").exists()
    _answer(result, lambda q: q.update(decision="theirs"))
    resolve_branch(result.worktree)
    assert not (result.worktree / "vime/own.py").exists()


def test_two_upstream_files_ported_onto_one_vime_module_keep_two_diffs(tmp_path):
    up, down = _pair(tmp_path, {"slime/x1.py": "X1 = 1\n", "slime/x2.py": "X2 = 1\n"})
    layout = 'kind = "layout"\n[paths]\n"slime/x1.py" = { port = "vime/shared.py" }\n"slime/x2.py" = { port = "vime/shared.py" }\n'
    commit(down, "layout", {"translations/layout.toml": layout, "vime/shared.py": "SHARED = 1\n"})
    commit(up, "both (#2)", {"slime/x1.py": "X1 = 2\n", "slime/x2.py": "X2 = 2\n"})
    result = _window(up, down, 2, 2)
    assert [(q.kind, q.file) for q in result.questions] == [("port", "vime/shared.py")] * 2
    assert "+X1 = 2" in (result.report_dir / "ports/slime/x1.py.diff").read_text()
    assert "+X2 = 2" in (result.report_dir / "ports/slime/x2.py.diff").read_text()
    assert (result.worktree / "vime/shared.py").read_text() == "SHARED = 1\n"


def test_a_port_diff_names_the_pr_behind_each_hunk(tmp_path):
    up, down = _pair(tmp_path, {"slime/own.py": LONG})
    commit(
        down, "layout", {"translations/layout.toml": 'kind = "layout"\n[paths]\n"slime/own.py" = "owned"\n'}
    )
    commit(up, "top (#2)", {"slime/own.py": LONG.replace("V2 = 2", "V2 = 'up'")})
    commit(
        up,
        "bottom (#3)",
        {"slime/own.py": LONG.replace("V2 = 2", "V2 = 'up'").replace("V28 = 28", "V28 = 'up'")},
    )
    result = _window(up, down, 3, 2)
    diff = (result.report_dir / "ports/slime/own.py.diff").read_text()
    headers = [line for line in diff.splitlines() if line.startswith("@@")]
    assert [h.rsplit(" PRs ", 1)[1] for h in headers] == ["#2", "#3"]
