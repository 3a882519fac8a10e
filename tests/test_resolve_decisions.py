"""`vime-sync resolve` and recorded decisions on real git repositories (stand-in translator for the window)."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner
from window_helpers import BIN2, FakeRules, build_scenario, commit, fake_translate, git

from sync.cli import app
from sync.decisions import RECORD_PATH
from sync.window import SyncError, run_window
from sync.window.resolve import resolve_branch
from sync.window.status import sync_status


def _window(sc):
    return run_window(
        sc.upstream, sc.downstream, to_pr=14, from_pr=11, rules=FakeRules(), translate_fn=fake_translate
    )


def _answer(result, choices):
    """Write decisions.json with ``choices``: {(file, kind): (decision, edit)}; returns the doc."""
    path = result.report_dir / "decisions.json"
    doc = json.loads(path.read_text())
    for q in doc["questions"]:
        if (q["file"], q["kind"]) in choices:
            q["decision"], q["edit"] = choices[(q["file"], q["kind"])]
    path.write_text(json.dumps(doc, indent=2))
    return doc


CHOICES = {
    ("vime/c.py", "conflict"): ("edit", "Y = 'reviewed'"),
    ("vime/both.py", "add_add"): ("both", None),
    ("vime/latin.txt", "conflict"): ("theirs", None),
    ("vime/e.py", "modify_delete"): ("theirs", None),
    ("vime/gone.py", "modify_delete"): ("theirs", None),
    ("vime/icon.bin", "binary"): ("theirs", None),
    ("vime/hits.py", "unsupported"): ("edit", "W = None  # no vLLM equivalent of pull_weights"),
}


@pytest.fixture
def sc(tmp_path):
    return build_scenario(tmp_path)


def test_refuses_while_a_decide_question_is_open(sc):
    result = _window(sc)
    head = git(result.worktree, "rev-parse", "HEAD")
    with pytest.raises(SyncError, match=r"Decide question\(s\) unanswered \(Q\d+"):
        resolve_branch(result.worktree)
    assert git(result.worktree, "rev-parse", "HEAD") == head
    assert git(result.worktree, "status", "--porcelain") == ""
    st = sync_status(result.worktree)
    assert st.tiers["Decide"] == 3 and len(st.unanswered_decide) == 3
    assert st.markers == {"vime/both.py": 1, "vime/c.py": 1, "vime/latin.txt": 1} and not st.resolved


def test_resolve_applies_every_kind_of_decision(sc):
    result = _window(sc)
    _answer(result, CHOICES)
    out = resolve_branch(result.worktree)
    wt = result.worktree
    assert git(wt, "log", "-1", "--format=%s") == "sync(slime #11..#14): resolve"
    assert (wt / "vime/c.py").read_text() == "X = 1\nY = 'reviewed'\nZ = 3\n"
    assert (wt / "vime/both.py").read_text() == "BOTH = 'downstream'\nBOTH = 'upstream'\n"
    assert (wt / "vime/latin.txt").read_bytes() == "caf\xe9 vllm\nline two\nthird caf\xe9\n".encode("latin-1")
    assert not (wt / "vime/e.py").exists()
    assert (wt / "vime/gone.py").read_text() == "G = 2\n"
    assert (wt / "vime/icon.bin").read_bytes() == BIN2 + b"-upstream"
    assert "W = None  # no vLLM equivalent of pull_weights\n" in (wt / "vime/hits.py").read_text()
    assert (wt / "vime/broken.py").read_text() == "def ok(:\n    return 1\n"  # Confirm default: keep
    for path in git(wt, "ls-files").splitlines():
        if not path.startswith("reports/"):
            assert b"\n<<<<<<< " not in b"\n" + (wt / path).read_bytes(), path
    assert not (out.report_dir / "alternatives").exists()
    assert git(wt, "status", "--porcelain") == ""
    recorded = json.loads((wt / RECORD_PATH).read_text())["decisions"]
    assert len(recorded) == len(out.report_dir.joinpath("decisions.json").read_text().split('"id": "Q')) - 1
    assert {v["decision"] for v in recorded.values()} >= {"edit", "both", "theirs", "keep"}
    st = sync_status(wt)
    assert st.resolved and st.markers == {} and st.unanswered_decide == []
    with pytest.raises(SyncError, match="already resolved"):
        resolve_branch(wt)


def test_edited_text_that_keeps_markers_is_refused(sc):
    result = _window(sc)
    bad = "<<<<<<< ours (vime)\nY = 1\n||||||| base\nY = 2\n=======\nY = 3\n>>>>>>> theirs\n"
    _answer(result, CHOICES | {("vime/c.py", "conflict"): ("edit", bad)})
    head = git(result.worktree, "rev-parse", "HEAD")
    with pytest.raises(SyncError, match="Q\\d+: the edited text for vime/c.py still has conflict markers"):
        resolve_branch(result.worktree)
    assert git(result.worktree, "rev-parse", "HEAD") == head
    assert "<<<<<<< ours (vime)\nY = 'downstream'" in (result.worktree / "vime/c.py").read_text()


def test_stale_decision_for_a_changed_hunk_is_refused(sc):
    result = _window(sc)
    doc = _answer(result, CHOICES)
    c = next(q for q in doc["questions"] if q["file"] == "vime/c.py")
    c["key"] = "0" * 24
    (result.report_dir / "decisions.json").write_text(json.dumps(doc))
    with pytest.raises(SyncError, match=r"Q3 does not match a question of this window"):
        resolve_branch(result.worktree)


def test_recorded_decisions_settle_the_same_conflicts_in_a_later_window(sc):
    first = _window(sc)
    _answer(first, CHOICES)
    resolve_branch(first.worktree)
    resolved_tree = {
        p: (first.worktree / p).read_bytes() for p in ("vime/c.py", "vime/both.py", "vime/latin.txt")
    }
    # the downstream keeps the recorded decisions but not this branch; the same conflicts come back
    recorded = (first.worktree / RECORD_PATH).read_bytes()
    git(sc.downstream, "worktree", "remove", "--force", str(first.worktree))
    git(sc.downstream, "branch", "-D", first.branch)
    commit(sc.downstream, "keep recorded sync decisions", {RECORD_PATH: recorded})
    second = _window(sc)
    tiers = {q.file: q.tier for q in second.questions if q.kind in ("conflict", "add_add")}
    assert tiers == {"vime/both.py": "Settled", "vime/c.py": "Settled", "vime/latin.txt": "Settled"}
    assert all(q.tier == "Settled" for q in second.questions)
    assert (
        "recorded decision from window 11-14"
        in next(q for q in second.questions if q.file == "vime/c.py").summary
    )
    resolve_branch(second.worktree)  # nothing to answer: every question is Settled
    for path, data in resolved_tree.items():
        assert (second.worktree / path).read_bytes() == data


def test_cli_resolve_and_status(sc):
    result = _window(sc)
    runner = CliRunner()
    refused = runner.invoke(app, ["resolve", "--worktree", str(result.worktree), "--no-gate"])
    assert refused.exit_code == 1 and "unanswered" in refused.output
    status = runner.invoke(app, ["status", "--worktree", str(result.worktree)])
    assert (
        status.exit_code == 0
        and "waiting for review" in status.output
        and "vime/c.py: 1 hunk" in status.output
    )
    _answer(result, CHOICES)
    done = runner.invoke(app, ["resolve", "--worktree", str(result.worktree), "--no-gate"])
    assert done.exit_code == 0, done.output
    status = runner.invoke(app, ["status", "--worktree", str(result.worktree)])
    assert "resolved" in status.output and "0 in 0 files" in status.output and "not run" in status.output
    shutil.rmtree(result.worktree / "vime", ignore_errors=False)
    assert runner.invoke(app, ["status", "--worktree", str(sc.downstream)]).exit_code == 1
