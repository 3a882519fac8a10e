"""Fault injection: `window` and `resolve` leave the complete result or nothing.

For each stage of both, an exception, SIGINT and SIGTERM at the stage boundary (plus an exception
after the commit is made, a failing git hook, read-only folders, a held lock, pool workers killed
mid-translation): the downstream (refs, worktrees, index, working tree, stash, untracked files,
cache entries) is exactly as before, no child process survives, and a re-run succeeds. Real git
repositories made in the test; the stand-in translator exercises the merge machinery.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fault_helpers import children, record_baseline, snapshot
from window_helpers import FakeRules, build_scenario, fake_translate, git

from sync.window import SyncError, run_window
from sync.window import resolve as resolve_mod
from sync.window import run as run_mod
from sync.window.resolve import RESOLVE_STAGES, resolve_branch
from sync.window.run import PER_PR_WINDOW_STAGES, WINDOW_STAGES
from sync.window.transaction import BOUNDARY_HOOKS, Interrupted

FAULTS = ("exception", "SIGINT", "SIGTERM")


class Injected(RuntimeError):
    pass


@pytest.fixture(autouse=True)
def _children_baseline():
    """Count only the children a test itself starts (the session's engines are older)."""
    record_baseline()


@pytest.fixture
def sc(tmp_path):
    sc = build_scenario(tmp_path)
    git(sc.downstream, "stash", "list")
    (sc.downstream / "untracked.txt").write_text("mine\n")  # untracked files must survive
    (sc.downstream / "vime/local_only.py").write_text("LOCAL = 'edited, not committed'\n")
    git(sc.downstream, "add", "vime/local_only.py")  # staged: the index must survive too
    (sc.downstream / "stashed.txt").write_text("s\n")
    git(sc.downstream, "stash", "push", "-u", "-q", "--", "stashed.txt")
    yield sc
    BOUNDARY_HOOKS.clear()


def inject(at: str, fault: str) -> None:
    def hook(stage: str) -> None:
        if stage != at:
            return
        if fault == "exception":
            raise Injected(f"injected at {stage}")
        os.kill(os.getpid(), signal.SIGINT if fault == "SIGINT" else signal.SIGTERM)
        time.sleep(1)  # the signal arrives before this ends
        raise AssertionError("signal not delivered")

    BOUNDARY_HOOKS.append(hook)


def expected_error(fault: str) -> type[BaseException]:
    return Injected if fault == "exception" else (KeyboardInterrupt if fault == "SIGINT" else Interrupted)


def _window(sc, **kw):
    args = {"to_pr": 14, "from_pr": 11, "rules": FakeRules(), "translate_fn": fake_translate} | kw
    return run_window(sc.upstream, sc.downstream, **args)


def assert_rerun_works(sc, **kw) -> None:
    BOUNDARY_HOOKS.clear()
    result = _window(sc, **kw)
    assert git(sc.downstream, "rev-parse", f"{result.branch}~{len(result.commits)}") == git(
        sc.downstream, "rev-parse", "HEAD"
    )
    assert (result.report_dir / "decisions.json").is_file()


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("stage", [name for name, _ in WINDOW_STAGES])
def test_window_fault_at_each_stage_changes_nothing(sc, stage, fault):
    before = snapshot(sc.downstream)
    inject(stage, fault)
    with pytest.raises(expected_error(fault)):
        _window(sc)
    assert snapshot(sc.downstream) == before
    assert children() == []
    assert_rerun_works(sc)


@pytest.mark.parametrize("stage", [name for name, _ in PER_PR_WINDOW_STAGES])
def test_per_pr_window_fault_at_each_stage_changes_nothing(sc, stage):
    before = snapshot(sc.downstream)
    inject(stage, "SIGTERM")
    with pytest.raises(Interrupted):
        _window(sc, per_pr=True)
    assert snapshot(sc.downstream) == before
    assert children() == []
    assert_rerun_works(sc, per_pr=True)


def test_window_failure_after_the_commit_removes_the_commit(sc, monkeypatch):
    before = snapshot(sc.downstream)
    real = run_mod.commit_paths

    def commit_then_fail(*args, **kwargs):
        real(*args, **kwargs)
        raise Injected("after the commit")

    monkeypatch.setattr(run_mod, "commit_paths", commit_then_fail)
    with pytest.raises(Injected):
        _window(sc)
    assert snapshot(sc.downstream) == before
    monkeypatch.undo()
    assert_rerun_works(sc)


def test_failing_post_checkout_hook_leaves_nothing(sc):
    hook = sc.downstream / ".git/hooks/post-checkout"
    hook.write_text("#!/bin/sh\necho 'git-lfs not found' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = snapshot(sc.downstream)
    with pytest.raises(
        SyncError, match=r"could not create the worktree .*git-lfs not found.*run again"
    ) as err:
        _window(sc)
    assert "\n" not in str(err.value)
    assert snapshot(sc.downstream) == before
    hook.unlink()
    assert_rerun_works(sc)


@contextlib.contextmanager
def read_only(path: Path):
    """A folder nobody may write, root included (root ignores modes: use the immutable flag)."""
    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
            pytest.skip("chattr +i is not supported here")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=True)
    else:
        path.chmod(0o555)
        try:
            yield
        finally:
            path.chmod(0o755)


def test_read_only_parent_is_refused_before_any_write(sc, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    before = snapshot(sc.downstream)
    with (
        read_only(ro),
        pytest.raises(SyncError, match=r"is not a writable folder; pass --worktree PATH elsewhere"),
    ):
        _window(sc, worktree=ro / "wt")
    assert snapshot(sc.downstream) == before


def test_read_only_downstream_git_is_one_line(sc):
    before = snapshot(sc.downstream)
    with (
        read_only(sc.downstream / ".git"),
        pytest.raises(SyncError, match=r"cannot write the lock file .*make .* writable") as err,
    ):
        _window(sc)
    assert "\n" not in str(err.value)
    assert snapshot(sc.downstream) == before
    assert_rerun_works(sc)


def test_worktree_under_a_file_is_refused_before_any_write(sc, tmp_path):
    """The read-only-folder check as root can see it: the worktree's parent is not a folder at all."""
    (tmp_path / "plain-file").write_text("x\n")
    before = snapshot(sc.downstream)
    with pytest.raises(SyncError, match=r"is not a writable folder; pass --worktree PATH elsewhere"):
        _window(sc, worktree=tmp_path / "plain-file" / "wt")
    assert snapshot(sc.downstream) == before


def test_unwritable_cache_mid_run_rolls_back(sc, monkeypatch):
    """A write that fails inside a stage (here: the cache, as on a read-only or full disk) undoes the run."""
    before = snapshot(sc.downstream)

    def refuse(self, path, oid, value):
        raise PermissionError(13, "Permission denied", str(self.dir))

    monkeypatch.setattr(run_mod.TranslationCache, "put", refuse)
    with pytest.raises(PermissionError):
        _window(sc)
    assert snapshot(sc.downstream) == before
    monkeypatch.undo()
    assert_rerun_works(sc)


def test_a_held_lock_refuses_a_second_run(sc):
    from sync.window.transaction import run_lock

    before = snapshot(sc.downstream)
    held = r"another vime-sync run holds .*vime-sync\.lock \(another run, pid \d+\)"
    with run_lock(sc.downstream / ".git", "another run"), pytest.raises(SyncError, match=held):
        _window(sc)
    assert snapshot(sc.downstream) == before
    assert_rerun_works(sc)


DONE_LOG = "VIME_TEST_TRANSLATED_LOG"


def slow_translate(path, data, rules):
    time.sleep(0.4)
    with open(os.environ[DONE_LOG], "a") as log:  # one line per translation that ran (any process)
        log.write(path + "\n")
    return fake_translate(path, data, rules)


def test_sigterm_during_parallel_translation_cancels_the_queue_and_ends_workers(
    sc, monkeypatch, tmp_path_factory
):
    """The queued translations are dropped, not run to the end (the old pool waited ~10 s for them)."""
    log = tmp_path_factory.mktemp("log") / "translated.log"
    monkeypatch.setenv(DONE_LOG, str(log))
    monkeypatch.setattr("sync.window.parallel.MIN_PARALLEL", 2)
    monkeypatch.setenv("VIME_SYNC_JOBS", "2")
    before = snapshot(sc.downstream)
    jobs = len(run_mod.translation_jobs(run_mod.changed_files(sc.upstream, sc.cutoff, sc.tip), FakeRules()))
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        with pytest.raises(Interrupted):
            _window(sc, translate_fn=slow_translate)
    finally:
        timer.cancel()
    time.sleep(1)  # a worker that survived would log more translations meanwhile
    ran = log.read_text().splitlines() if log.exists() else []
    assert len(ran) < jobs // 2, f"{len(ran)} of {jobs} queued translations still ran after SIGTERM"
    assert children() == []
    assert snapshot(sc.downstream) == before
    monkeypatch.undo()
    assert_rerun_works(sc)


# --- resolve ----------------------------------------------------------------------------------------


def _answered_window(sc):
    result = _window(sc)
    path = result.report_dir / "decisions.json"
    doc = json.loads(path.read_text())
    for q in doc["questions"]:
        if q["tier"] == "Decide":
            q["decision"] = "ours"
    path.write_text(json.dumps(doc, indent=2))
    return result


def gate_passes(worktree: Path, report_dir: Path) -> bool:
    (report_dir / "gate.json").write_text('{"passed": true}\n')
    return True


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("stage", [name for name, _ in RESOLVE_STAGES])
def test_resolve_fault_at_each_stage_changes_nothing(sc, stage, fault):
    result = _answered_window(sc)
    before = snapshot(result.worktree)
    inject(stage, fault)
    with pytest.raises(expected_error(fault)):
        resolve_branch(result.worktree, gate=gate_passes)
    assert snapshot(result.worktree) == before
    assert children() == []
    BOUNDARY_HOOKS.clear()
    done = resolve_branch(result.worktree, gate=gate_passes)
    subjects = git(result.worktree, "log", "--format=%s", "-n", "2").splitlines()
    assert subjects == ["sync: gate passed", "sync(slime #11..#14): resolve"] and done.gate_passed


def test_resolve_gate_crash_undoes_commit_2(sc):
    """The gate raising (vLLM broken at import, say) used to leave commit 2 and refuse the next resolve."""
    result = _answered_window(sc)
    before = snapshot(result.worktree)

    def crash(worktree, report_dir):
        raise RuntimeError("vllm: CUDA driver mismatch")

    with pytest.raises(RuntimeError):
        resolve_branch(result.worktree, gate=crash)
    assert snapshot(result.worktree) == before
    assert resolve_branch(result.worktree, gate=gate_passes).gate_passed


def test_stale_hunk_in_the_third_file_is_refused_before_any_write(sc):
    result = _answered_window(sc)
    doc = json.loads((result.report_dir / "decisions.json").read_text())
    hunk_files = sorted({q["file"] for q in doc["questions"] if q["kind"] in ("conflict", "add_add")})
    assert len(hunk_files) >= 3
    last = result.worktree / hunk_files[-1]
    lines = last.read_bytes().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith(b"<<<<<<<"))
    last.write_bytes(b"".join([*lines[: at + 1], b"# a hand edit inside the hunk\n", *lines[at + 1 :]]))
    git(result.worktree, "commit", "-q", "-am", "a reviewer's hand edit")
    before = snapshot(result.worktree)
    with pytest.raises(SyncError, match=r"no longer matches the question"):
        resolve_branch(result.worktree)
    assert snapshot(result.worktree) == before


def test_failure_writing_the_record_restores_every_file(sc, monkeypatch):
    result = _answered_window(sc)
    before = snapshot(result.worktree)

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(resolve_mod, "dump_recorded", broken)
    with pytest.raises(OSError):
        resolve_branch(result.worktree)
    assert snapshot(result.worktree) == before


def test_a_symlinked_folder_leading_outside_the_worktree_is_never_written_through(tmp_path):
    """The downstream keeps `vime/linked` as a symlink out of the tree; upstream adds a file below it."""
    from window_helpers import commit, init_repo

    outside = tmp_path / "outside"
    outside.mkdir()
    up = init_repo(tmp_path / "up")
    commit(up, "base (#1)", {"slime/a.py": "A = 1\n"})
    commit(up, "add below (#2)", {"slime/linked/new.py": "NEW = 1\n"})
    down = init_repo(tmp_path / "down")
    (down / "vime").mkdir()
    (down / "vime/linked").symlink_to("../../outside")
    commit(down, "vime at #1", {"vime/a.py": "A = 1\n"})
    git(down, "add", "vime/linked")
    git(down, "commit", "-q", "-m", "a link out of the tree")
    before = snapshot(down)
    with pytest.raises(SyncError, match=r"vime/linked/new\.py leads outside the worktree .*remove the link"):
        run_window(up, down, 2, 2, rules=FakeRules(), translate_fn=fake_translate)
    assert list(outside.iterdir()) == []
    assert snapshot(down) == before


_AFTER_COMMIT = """
import os, signal, sys, time
from pathlib import Path
from sync.window.transaction import ignore_signals_after_commit, transaction
if sys.argv[2] == "cli":
    ignore_signals_after_commit()  # what the vime-sync process does (sync.cli.run)
with transaction(Path(sys.argv[1]), "test") as tx:
    tx.undo("the run's write", lambda: print("rolled back", flush=True))
os.kill(os.getpid(), signal.SIGTERM)  # the run has committed; the signal lands while it reports
os.kill(os.getpid(), signal.SIGINT)
time.sleep(0.2)
print("reported", flush=True)
"""


@pytest.mark.parametrize("mode", ["cli", "library"])
def test_a_signal_after_the_commit_point_neither_undoes_nor_misreports(tmp_path, mode):
    """The vime-sync process ignores Ctrl-C / SIGTERM once a run has committed: it reports and exits 0
    (it used to end by the signal, or say "interrupted; rolled back", over a complete result).
    A library caller keeps its own signal handling."""
    git_dir = tmp_path / ".git"
    git_dir.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _AFTER_COMMIT, str(git_dir), mode], capture_output=True, text=True, timeout=60
    )
    assert "rolled back" not in done.stdout  # committed work is never undone
    if mode == "cli":
        assert (done.returncode, done.stdout.strip()) == (0, "reported"), done.stderr
    else:
        assert done.returncode == -signal.SIGTERM and "reported" not in done.stdout


def test_signals_held_holds_a_signal_that_another_thread_receives():
    """A rollback is held against Ctrl-C even while a progress spinner's thread runs: the kernel gives a
    signal blocked in the main thread to that thread, and Python would still raise it in the main one."""
    from sync.window.transaction import signals_held

    stop = threading.Event()
    spinner = threading.Thread(target=stop.wait, daemon=True)
    spinner.start()
    reached_the_end = False
    try:
        with pytest.raises(KeyboardInterrupt), signals_held():
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(200):  # bytecodes the handler would interrupt, were it not held
                time.sleep(0.001)
            reached_the_end = True
    finally:
        stop.set()
        spinner.join()
    assert reached_the_end
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
