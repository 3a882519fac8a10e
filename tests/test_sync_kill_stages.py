"""A real `vime-sync window` / `resolve` process killed by SIGKILL at each stage (and inside the
worktree creation, between file writes, right after a commit): the next run says in one line what was
left and the command that removes it; that command works; the rerun gives the commit id and tree of
an uninterrupted run. Small repositories, the real CLI and translator (``tests/kill_drill.py`` does
the killing; run it as a script for a real slime window)."""

from __future__ import annotations

import json

import pytest
from kill_drill import (
    PER_PR_POINTS,
    RESOLVE_POINTS,
    WINDOW_POINTS,
    killed_run,
    resolve_drill,
    vime_sync,
    window_drill,
)
from window_helpers import build_scenario

pytestmark = pytest.mark.slow


def _check(drill, command: str) -> None:
    assert all(r.killed for r in drill.rounds), [(r.point, r.killed) for r in drill.rounds]
    for r in drill.rounds:
        if r.left != "nothing" and r.way_out not in ("none needed", "none needed (the window was complete)"):
            assert r.next_line.startswith(f"vime-sync {command}: a `vime-sync {command}` run"), (
                r.point,
                r.next_line,
            )
            assert "--repair" in r.next_line and "\n" not in r.next_line
        assert r.same, (r.point, r.left, r.next_line, r.way_out)


def test_a_window_killed_at_each_point_has_a_way_out_to_the_same_commit(tmp_path):
    sc = build_scenario(tmp_path)
    drill = window_drill(
        sc.upstream, sc.downstream, ["--from", "11", "--to", "14"], "sync/slime-11-14", tmp_path / "wt",
        WINDOW_POINTS, hand_points=("in:worktree-add", "stage:commit"), report=lambda _line: None,
    )  # fmt: skip
    _check(drill, "window")
    left = {r.point: r.left for r in drill.rounds}
    assert left["stage:translate"] == "nothing"
    assert "branch" in left["in:worktree-add"] and "journal" in left["in:worktree-add"]
    assert left["write:3"].startswith("branch, worktree (dirty)")
    # an empty commondir makes plain `git branch` die; vime-sync still names it and --repair clears it
    assert left["in:worktree-add-empty-commondir"].startswith("branch, worktree")
    ways = {r.point: r.way_out for r in drill.rounds}
    assert ways["stage:commit"] == "the git commands it printed"
    assert ways["in:worktree-add-empty-commondir"] == "vime-sync window --repair"
    assert ways["after:sync.window.run.commit_paths"] == "none needed (the window was complete)"


def test_a_per_pr_window_killed_at_each_point_has_a_way_out(tmp_path):
    sc = build_scenario(tmp_path)
    drill = window_drill(
        sc.upstream, sc.downstream, ["--from", "11", "--to", "14", "--per-pr"], "sync/slime-11-14",
        tmp_path / "wt", PER_PR_POINTS, report=lambda _line: None,
    )  # fmt: skip
    _check(drill, "window")


def test_a_resolve_killed_at_each_point_has_a_way_out_to_the_same_commit(tmp_path):
    sc = build_scenario(tmp_path)
    wt = tmp_path / "wt"
    done = vime_sync("window", "--upstream", str(sc.upstream), "--downstream", str(sc.downstream),
                     "--from", "11", "--to", "14", "--worktree", str(wt))  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads((wt / "reports/slime-11-14/decisions.json").read_text())
    for q in doc["questions"]:
        if q["tier"] == "Decide":
            q["decision"] = "theirs" if "theirs" in q["options"] else q["options"][0]
    drill = resolve_drill(wt, doc, RESOLVE_POINTS, report=lambda _line: None)
    _check(drill, "resolve")
    assert sum(r.way_out == "vime-sync resolve --repair" for r in drill.rounds) >= 4


def test_status_resolve_and_gate_print_the_way_out_of_a_killed_window(tmp_path):
    sc = build_scenario(tmp_path)
    wt = tmp_path / "wt"
    args = [
        "window",
        "--upstream",
        str(sc.upstream),
        "--downstream",
        str(sc.downstream),
        "--from",
        "11",
        "--to",
        "14",
    ]
    assert killed_run("write:3", [*args, "--worktree", str(wt)], wt) == -9
    for command in (
        ["status", "--worktree", str(wt)],
        ["resolve", "--worktree", str(wt)],
        ["gate", "--worktree", str(wt)],
    ):
        result = vime_sync(*command)
        line = result.stderr.strip().splitlines()[-1]
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert (
            "a `vime-sync window` run" in line
            and f"`vime-sync window --repair --downstream {sc.downstream}`" in line
        ), line
    fixed = vime_sync("window", "--repair", "--downstream", str(sc.downstream))
    assert fixed.returncode == 0 and "repaired: undid" in fixed.stdout, fixed.stdout + fixed.stderr
    assert not wt.exists()
    assert vime_sync(*args, "--worktree", str(wt)).returncode == 0
