"""`vime-sync follow` as a user runs it: the command line on the embedded demo (real translator), a
real process killed at arbitrary moments (only complete PRs stay), and the real gate stopping at a
PR that breaks the build, then going on once a person committed the fix."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fault_helpers import group_alive
from typer.testing import CliRunner
from window_helpers import FakeRules, build_scenario, fake_translate, git

from sync.cli import app
from sync.demo.build import build_demo
from sync.follow.run import FollowOptions, follow
from sync.window.follow_branch import FOLLOW_BRANCH, FOLLOW_TRAILER


def _cli(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.mark.slow
def test_follow_command_on_the_demo(tmp_path):
    repos = build_demo(tmp_path / "demo")
    common = ["--upstream", str(repos.upstream), "--downstream", str(repos.downstream)]
    planned = _cli("follow", *common, "--from", "111", "--dry-run")
    assert planned.exit_code == 0, planned.output
    assert f"would create {FOLLOW_BRANCH}" in planned.output and "#109 Fix stale doc link" in planned.output
    assert not (tmp_path / "demo" / "vime-sync-follow").exists()

    done = _cli("follow", *common, "--from", "111", "--no-gate")
    assert done.exit_code == 1, done.output
    assert "#109 mirrored · 0 Decide, 0 Confirm, 0 Settled · gate not run" in done.output
    assert "#113 waits for answers · 1 Decide" in done.output
    assert "vime-sync follow: #113 needs a person: 1 Decide question(s) open (Q1)" in done.output
    worktree = tmp_path / "demo" / "vime-sync-follow"
    status = _cli("status", "--worktree", str(worktree))
    assert status.exit_code == 0 and "Decide questions unanswered" in status.output

    again = _cli("follow", *common, "--dry-run")
    assert "#113 waits for answers: 1 Decide question(s) open; would stop there" in again.output
    refused = _cli("follow", *common, "--from", "111")
    assert refused.exit_code == 1
    assert (
        "vime-sync follow: sync/follow exists and goes on from its state file; drop --from" in refused.output
    )


FIRST_DELAY_S, DELAY_STEP_S, MAX_RUNS = 0.3, 0.15, 60


def _boundary(worktree: Path) -> bool:
    """The follow branch's tip is a finished PR, or a PR waiting for answers (its commit 1)."""
    body = git(worktree, "log", "-1", "--format=%B")
    subject = body.splitlines()[0]
    return "): follow gate " in subject or (subject.endswith("3-way merge") and FOLLOW_TRAILER in body)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_follow_killed_at_any_moment_keeps_only_complete_prs(tmp_path, sig):
    repos = build_demo(tmp_path / "demo")
    worktree = tmp_path / "demo" / "vime-sync-follow"
    base = [
        sys.executable, "-m", "sync.cli", "follow", "--upstream", str(repos.upstream),
        "--downstream", str(repos.downstream), "--no-gate",
    ]  # fmt: skip

    def command() -> list[str]:
        """--from starts the branch; once it exists follow goes on from its state file (and refuses --from)."""
        started = git(repos.downstream, "branch", "--list", FOLLOW_BRANCH) != ""
        return base if started else [*base, "--from", "111"]

    # Each run is killed a little later than the one before, until one gets to #113 on its own: the
    # signals sweep start-up, every PR and the gaps between them whatever this machine's speed.
    inside_work, outcomes = 0, []
    while len(outcomes) < MAX_RUNS and not any(rc == 1 for _, rc in outcomes):
        delay = round(FIRST_DELAY_S + DELAY_STEP_S * len(outcomes), 2)
        cmd = command()
        proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(delay)
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        outcomes.append((delay, proc.returncode))
        seen = f"after {sig.name} at {delay} s, rc {proc.returncode}; stderr: {err.decode()!r}; stdout: {out.decode()[-800:]!r}"
        deadline = time.monotonic() + 5
        while group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert group_alive(proc.pid) == [], f"processes left after {sig.name} at {delay} s"
        assert "Traceback" not in err.decode(), seen
        # 1: stopped at #113 before the signal; 130: interrupted; -sig: ended by it while starting up
        assert proc.returncode in (1, 130, -sig), seen
        if proc.returncode == 1:
            assert "#113 needs a person" in err.decode(), seen
        if proc.returncode == 130:
            said = err.decode()
            inside_work += "vime-sync follow: interrupted (" in said
            # between or inside PRs: follow's own line; before its first PR (opening the branch):
            # the generic one; before the CLI loaded: the start-up one. The checks below hold for all.
            assert (
                "vime-sync follow: interrupted (" in said
                and ("every PR mirrored before it stays" in said or "rolled back" in said)
            ) or ("while starting; nothing was changed" in said), seen
        if worktree.exists():
            assert git(worktree, "status", "--porcelain") == ""
            assert _boundary(worktree), git(worktree, "log", "-1", "--format=%s")
        else:
            assert git(repos.downstream, "branch", "--list", FOLLOW_BRANCH) == ""
        worktrees = git(repos.downstream, "worktree", "list").splitlines()
        assert len(worktrees) == (2 if worktree.exists() else 1), worktrees
    assert inside_work, f"no run was interrupted inside follow's work (delay s, rc: {outcomes})"
    done = subprocess.run(command(), capture_output=True, timeout=300, check=False)
    assert done.returncode == 1 and b"#113 needs a person" in done.stderr, done.stderr.decode()


@pytest.mark.slow
def test_the_gate_stops_at_the_pr_that_breaks_the_build_and_goes_on_after_the_fix(tmp_path):
    sc = build_scenario(tmp_path)
    opts = FollowOptions(from_pr=11)

    def run():
        return follow(sc.upstream, sc.downstream, opts, rules=FakeRules(), translate_fn=fake_translate)

    result = run()
    opts = FollowOptions()
    while result.stop and "needs a person" in result.stop:
        pr = result.steps[-1].pr
        path = result.worktree / f"reports/slime-{pr}-{pr}/decisions.json"
        doc = json.loads(path.read_text())
        for q in doc["questions"]:
            if q["tier"] == "Decide":
                q["decision"] = "theirs"
        path.write_text(json.dumps(doc))
        result = run()
    wt = result.worktree
    assert result.steps[-1].label == "#14" and result.stop.startswith("#14: the gate found 1 new failure(s)")
    gate = json.loads((wt / "reports/slime-14-14/gate.json").read_text())
    assert (gate["mode"], gate["passed"]) == ("follow", False)
    [new] = gate["new"]
    assert (new["check"], new["files"], new["prs"]) == ("compile", ["vime/broken.py"], [14])
    assert all(
        s.summary.gate == "passed" for s in result.steps[:-1]
    )  # translated code's own failures: not new

    (wt / "vime/broken.py").write_text("def ok():\n    return 1\n")  # a person fixes it on the branch
    git(wt, "commit", "-q", "-am", "fix broken.py")
    fixed = run()
    assert [(o.label, o.resumed, o.summary.gate) for o in fixed.steps] == [
        ("#14", True, "passed"),
        ("#13", False, "passed"),
    ]
    assert fixed.up_to_date


def test_ctrl_c_while_typer_parses_still_says_one_line():
    """typer turns a Ctrl-C during its own work (here the command line's callback) into a silent exit
    130; the process says no command had started. CI caught it: a follow run interrupted while typer
    parsed its options exited 130 with an empty stderr."""
    script = """
import sys
import sync.cli
def interrupted(_on):
    raise KeyboardInterrupt
sync.cli.set_debug = interrupted
sys.argv = ["vime-sync", "rules", "--help"]
sync.cli.run()
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert "vime-sync: stopped by SIGINT while starting; nothing was changed" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def test_typer_exit_130_after_the_command_finished_says_so(monkeypatch):
    """The other side: typer's exit 130 after a command's body returned names the finished command;
    a command's own interrupt (its line already written) and any other exit get no second line."""
    import click

    from sync.commands import errors

    def typer_exit_130() -> SystemExit:
        try:
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as e:
                raise click.exceptions.Exit(130) from e
        except click.exceptions.Exit:
            try:
                raise SystemExit(130)
            except SystemExit as exc:
                return exc

    monkeypatch.setitem(errors.COMMAND_PHASE, "began", True)
    monkeypatch.setitem(errors.COMMAND_PHASE, "ended", True)
    line = errors.interrupted_outside_a_command(typer_exit_130())
    assert line == "vime-sync: stopped by SIGINT while exiting; the command had already finished"
    assert errors.interrupted_outside_a_command(SystemExit(130)) is None
    assert errors.interrupted_outside_a_command(SystemExit(1)) is None


@pytest.mark.parametrize(
    ("raised", "expected"), [("KeyboardInterrupt()", "SIGINT"), ("Interrupted('x')", "SIGTERM")]
)
def test_a_signal_dropped_where_python_cannot_raise_is_raised_again(raised, expected):
    """A Ctrl-C landing inside code called from C (a destructor here; pydantic building a validator
    in CI's sweep) used to be printed as "Exception ignored" and dropped: follow went on to the end.
    The process sends it again, and the command's own handling sees it (SIGTERM as ``Interrupted``)."""
    script = f"""
import signal, sys, time
import sync.cli
from sync.window.transaction import Interrupted, _signals_as_exceptions
class Finalised:
    def __del__(self):
        raise {raised}
sys.argv = ["vime-sync"]
sync.cli._redeliver_swallowed_interrupts()
with _signals_as_exceptions():
    try:
        Finalised()
        time.sleep(5)
        print("went on")
    except Interrupted:
        print("raised again: SIGTERM")
    except KeyboardInterrupt:
        print("raised again: SIGINT")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stdout.strip() == f"raised again: {expected}", (done.stdout, done.stderr)
