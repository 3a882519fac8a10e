"""A real `vime-sync window` process on the embedded demo (real translator), killed at arbitrary
moments by SIGTERM (as `kill PID` does) or SIGINT to its process group (as Ctrl-C in a terminal
does): it ends promptly, leaves the complete result or nothing, and no process of its group
survives (pool workers, `git cat-file`). A final run completes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from fault_helpers import group_alive, snapshot
from window_helpers import git

from sync.demo.build import build_demo

DELAYS = (0.6, 1.2, 1.8, 2.4, 3.2, 4.5)


def _reset(repos, worktree) -> None:
    if worktree.exists():
        git(repos.downstream, "worktree", "remove", "--force", str(worktree))
    if git(repos.downstream, "branch", "--list", "sync/*"):
        git(repos.downstream, "branch", "-D", "sync/slime-111-122")


def _without_cache(snap: dict) -> dict:
    return {**snap, "files": {k: v for k, v in snap["files"].items() if not k.startswith(".git/")}}


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_window_killed_at_any_moment_leaves_all_or_nothing(tmp_path, sig):
    repos = build_demo(tmp_path / "demo")
    worktree = tmp_path / "demo" / "vime-sync-111-122"
    cmd = [
        sys.executable, "-m", "sync.cli", "window", "--upstream", str(repos.upstream),
        "--downstream", str(repos.downstream), "--from", "111", "--to", "122",
    ]  # fmt: skip
    outcomes = []
    for delay in DELAYS:
        before = _without_cache(snapshot(repos.downstream))
        proc = subprocess.Popen(
            cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env={**os.environ, "VIME_SYNC_JOBS": "2"},
        )  # fmt: skip
        time.sleep(delay)
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)  # Ctrl-C reaches the whole foreground group
        else:
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)  # a run that does not stop fails here
        deadline = time.monotonic() + 5
        while group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert group_alive(proc.pid) == [], f"processes left after {sig.name} at {delay} s"
        assert "Traceback" not in err.decode(), err.decode()
        if proc.returncode == 0:  # it finished before the signal: the complete result
            assert (worktree / "reports/slime-111-122/decisions.json").is_file()
            assert git(worktree, "status", "--porcelain") == ""
            _reset(repos, worktree)
        else:
            assert proc.returncode in (130, -sig), (proc.returncode, err.decode())
            assert _without_cache(snapshot(repos.downstream)) == before
        outcomes.append(proc.returncode)
    assert any(rc != 0 for rc in outcomes), "no run was interrupted: the delays are too long for this machine"
    done = subprocess.run(cmd, capture_output=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode()
