"""Bad input to `vime-sync window` gives one clear line and changes nothing (real git repos; stand-in translator)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner
from window_helpers import FakeRules, build_scenario, fake_translate, git

from sync.cli import app
from sync.window import SyncError, run_window


@pytest.fixture
def sc(tmp_path):
    return build_scenario(tmp_path)


def _run(sc, **kw):
    args = {"to_pr": 14, "from_pr": 11, "rules": FakeRules(), "translate_fn": fake_translate} | kw
    return run_window(sc.upstream, sc.downstream, **args)


def _snapshot(sc):
    return (
        git(sc.downstream, "for-each-ref"),
        git(sc.downstream, "status", "--porcelain"),
        git(sc.downstream, "worktree", "list"),
    )


def _fails(sc, match, **kw):
    before = _snapshot(sc)
    with pytest.raises(SyncError, match=match) as err:
        _run(sc, **kw)
    assert "\n" not in str(err.value)
    assert _snapshot(sc) == before
    assert not (sc.downstream.parent / "downstream-sync-11-14").exists()


def test_branch_exists(sc):
    git(sc.downstream, "branch", "sync/slime-11-14")
    _fails(sc, r"branch sync/slime-11-14 already exists")


def test_upstream_not_a_repo(sc, tmp_path):
    (tmp_path / "plain").mkdir()
    before = _snapshot(sc)
    with pytest.raises(SyncError, match=r"upstream .*plain is not a git repository"):
        run_window(tmp_path / "plain", sc.downstream, 14, 11, rules=FakeRules(), translate_fn=fake_translate)
    with pytest.raises(SyncError, match=r"downstream .*plain is not a git repository"):
        run_window(sc.upstream, tmp_path / "plain", 14, 11, rules=FakeRules(), translate_fn=fake_translate)
    assert _snapshot(sc) == before


def test_dirty_file_the_window_needs(sc):
    (sc.downstream / "vime/c.py").write_text("Y = 'uncommitted'\n")
    _fails(sc, r"uncommitted changes in files this window merges: vime/c.py; commit or stash")


def test_dirty_file_the_window_does_not_need_is_fine(sc):
    (sc.downstream / "vime/local_only.py").write_text("LOCAL = 'uncommitted'\n")
    result = _run(sc)
    assert (sc.downstream / "vime/local_only.py").read_text() == "LOCAL = 'uncommitted'\n"
    assert (result.worktree / "vime/local_only.py").read_text() == "LOCAL = 1\n"


def test_unknown_pr(sc):
    _fails(sc, r"PR #99 is not merged", to_pr=99)
    _fails(sc, r"PR #4 \(the cutoff for --from 5\) is not merged", from_pr=5)


def test_empty_window(sc):
    _fails(sc, r"empty window", to_pr=10, from_pr=11)
    _fails(sc, r"empty window", to_pr=8, from_pr=11)


def test_cli_prints_one_line_and_exits_1(sc):
    git(sc.downstream, "branch", "sync/slime-11-14")
    result = CliRunner().invoke(
        app,
        [
            "window",
            "--upstream",
            str(sc.upstream),
            "--downstream",
            str(sc.downstream),
            "--from",
            "11",
            "--to",
            "14",
        ],
    )
    assert result.exit_code == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("vime-sync window: branch sync/slime-11-14 already exists")


def test_unreadable_state_file_and_missing_cutoff(sc):
    from window_helpers import commit

    with pytest.raises(SyncError, match=r"no cutoff: give --from N"):
        run_window(sc.upstream, sc.downstream, to_pr=14, rules=FakeRules(), translate_fn=fake_translate)
    commit(sc.downstream, "broken state", {".vime-sync/state.toml": "[last_sync]\ncutoff = 1\n"})
    with pytest.raises(
        SyncError,
        match=r"\.vime-sync/state\.toml \(committed at HEAD\) is unreadable .*; fix it, or pass --from",
    ):
        run_window(sc.upstream, sc.downstream, to_pr=14, rules=FakeRules(), translate_fn=fake_translate)
    # the advice works: --from gets past a broken state file, and commit 1 writes a good one
    result = run_window(
        sc.upstream, sc.downstream, to_pr=14, from_pr=11, rules=FakeRules(), translate_fn=fake_translate
    )
    assert "last_pr = 14" in (result.worktree / ".vime-sync/state.toml").read_text()
