"""Determinism, --per-pr, the translation cache and the state file (real git repos; stand-in translator)."""

from __future__ import annotations

import shutil

from window_helpers import FakeRules, build_scenario, commit, fake_translate, git

from sync.window import run_window


def _run(sc, **kw):
    args = {"to_pr": 14, "from_pr": 11, "rules": FakeRules(), "translate_fn": fake_translate} | kw
    return run_window(sc.upstream, sc.downstream, **args)


def _drop(sc, result):
    git(sc.downstream, "worktree", "remove", "--force", str(result.worktree))
    git(sc.downstream, "branch", "-D", result.branch)


def test_same_window_twice_is_byte_identical(tmp_path):
    sc = build_scenario(tmp_path)
    first = _run(sc)
    tree1, commit1 = git(first.worktree, "rev-parse", "HEAD^{tree}"), first.commits[0]
    reports1 = {p.name: p.read_bytes() for p in first.report_dir.iterdir() if p.is_file()}
    assert first.cache_misses > 0
    _drop(sc, first)
    second = _run(sc)
    assert git(second.worktree, "rev-parse", "HEAD^{tree}") == tree1
    assert second.commits[0] == commit1  # same tree, parent, message and fixed dates
    assert {p.name: p.read_bytes() for p in second.report_dir.iterdir() if p.is_file()} == reports1
    assert second.cache_misses == 0 and second.cache_hits == first.cache_misses + first.cache_hits
    # and without the cache the result is the same again
    _drop(sc, second)
    shutil.rmtree(sc.downstream / ".git/vime-sync-cache")
    third = _run(sc, use_cache=False)
    assert git(third.worktree, "rev-parse", "HEAD^{tree}") == tree1


def test_per_pr_commits_in_merge_order_end_at_the_window_tree(tmp_path):
    sc = build_scenario(tmp_path)
    whole = _run(sc)
    whole_tree = git(whole.worktree, "rev-parse", "HEAD^{tree}")
    _drop(sc, whole)
    per = _run(sc, per_pr=True)
    subjects = git(per.worktree, "log", "--format=%s", "-n", "7").splitlines()[::-1]
    refs = [s.split(": ", 1)[1].split(" ", 1)[0] for s in subjects[:6]]
    assert refs[:2] == ["#11", "#9"] and refs[3:] == ["#12", "#15", "#14"]
    assert refs[2] == git(sc.upstream, "log", "-1", "--format=%h", "--abbrev=8", "HEAD~4")  # the direct push
    assert subjects[0].startswith("sync(slime #11..#14) 1/6: #11 ")
    assert subjects[6] == "sync(slime #11..#14): 3-way merge"
    assert git(per.worktree, "rev-parse", "HEAD^{tree}") == whole_tree
    # after #11 only, c.py already conflicts and b.py is settled; new_mod.py (from #12) is not there yet
    after_11 = per.commits[0]
    assert "<<<<<<<" in git(per.worktree, "show", f"{after_11}:vime/c.py")
    assert "new_mod.py" not in git(per.worktree, "ls-tree", "-r", "--name-only", after_11)


def test_next_window_reads_the_state_file(tmp_path):
    sc = build_scenario(tmp_path)
    first = _run(sc)
    # the sync branch merges into main; upstream moves on with #16
    git(sc.downstream, "merge", "-q", "--no-ff", "-m", "merge sync", first.branch)
    commit(sc.upstream, "after the window (#16)", {"slime/new_mod.py": "from sglang import x\n\nNEW = 2\n"})
    second = run_window(sc.upstream, sc.downstream, to_pr=16, rules=FakeRules(), translate_fn=fake_translate)
    assert second.branch == "sync/slime-15-16"
    assert second.window.cutoff == first.window.tip
    assert [c.pr for c in second.window.commits] == [13, 16]
    assert (second.worktree / "vime/new_mod.py").read_text() == "from vllm import x\n\nNEW = 2\n"


def test_parallel_translation_gives_the_same_tree(tmp_path, monkeypatch):
    from sync.window import parallel

    sc = build_scenario(tmp_path)
    sequential = _run(sc, use_cache=False)
    tree = git(sequential.worktree, "rev-parse", "HEAD^{tree}")
    _drop(sc, sequential)
    monkeypatch.setattr(parallel, "MIN_PARALLEL", 1)
    monkeypatch.setenv("VIME_SYNC_JOBS", "2")
    calls = []
    real = parallel.pretranslate
    monkeypatch.setattr(
        "sync.window.run.pretranslate", lambda *a, **k: calls.append(real(*a, **k)) or calls[-1]
    )
    par = _run(sc)
    assert calls and calls[0] == par.cache_misses > 0  # every translation came from the worker processes
    assert git(par.worktree, "rev-parse", "HEAD^{tree}") == tree
