"""`vime-sync follow` on real git repositories: PR by PR onto sync/follow, stopping at the first PR
that needs a person and resuming there after the answers; --until, --max, --dry-run; a fault at
every stage boundary of a PR leaves the PRs before it complete and nothing of it; the downstream
moving on. The stand-in translator exercises the machinery (the real one runs in the CLI tests)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from fault_helpers import children, record_baseline, snapshot
from window_helpers import FakeRules, build_scenario, commit, fake_translate, git

from sync.follow.run import FollowInterrupted, FollowOptions, follow, plan
from sync.follow.step import ANSWERS_STAGES, NEW_PR_STAGES
from sync.ledger import LedgerError, StepSummary, load_ledger, parse_ledger
from sync.window import SyncError, run_window
from sync.window.follow_branch import FOLLOW_BRANCH
from sync.window.resolve import RESOLVE_STAGES, resolve_branch
from sync.window.status import sync_status
from sync.window.transaction import BOUNDARY_HOOKS

MIRRORED_ROOTS = ("reports/", ".vime-sync/")


class Injected(RuntimeError):
    pass


@pytest.fixture(autouse=True)
def _clean_hooks():
    record_baseline()
    yield
    BOUNDARY_HOOKS.clear()


@pytest.fixture
def sc(tmp_path):
    return build_scenario(tmp_path)


def run(sc, **kw):
    options = FollowOptions(**({"gate": False} | kw))
    return follow(sc.upstream, sc.downstream, options, rules=FakeRules(), translate_fn=fake_translate)


def answer(worktree: Path, pr: int, choice: str = "theirs") -> int:
    """Answer every open Decide question of PR ``pr`` as a reviewer would, in decisions.json."""
    path = worktree / f"reports/slime-{pr}-{pr}/decisions.json"
    doc = json.loads(path.read_text())
    n = 0
    for q in doc["questions"]:
        if q["tier"] == "Decide" and not q.get("decision"):
            q["decision"], n = choice, n + 1
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return n


def subjects(worktree: Path) -> list[str]:
    return git(worktree, "log", "--first-parent", "--format=%s", "HEAD").splitlines()


def mirrored_tree(worktree: Path) -> dict[str, str]:
    """Every file of HEAD outside the report folders: mode and blob."""
    out = {}
    for line in git(worktree, "ls-tree", "-r", "HEAD").splitlines():
        meta, path = line.split("\t", 1)
        if not path.startswith(MIRRORED_ROOTS):
            out[path] = meta
    return out


def test_first_run_stops_at_the_first_decide_with_the_queue_window_makes(sc):
    result = run(sc, from_pr=11)
    assert [o.label for o in result.steps] == ["#11"]
    assert result.stop and result.stop.startswith("#11 needs a person: 1 Decide question(s) open (Q1)")
    wt = result.worktree
    assert wt == sc.downstream.parent / "downstream-sync-follow"
    assert subjects(wt)[0] == "sync(slime #11..#11): 3-way merge"
    assert git(wt, "rev-parse", "HEAD~1") == git(sc.downstream, "rev-parse", "HEAD")
    assert git(wt, "status", "--porcelain") == ""

    window = run_window(sc.upstream, sc.downstream, 11, 11, rules=FakeRules(), translate_fn=fake_translate)
    ours, theirs = mirrored_tree(wt), mirrored_tree(window.worktree)
    assert ours == theirs  # the same merge, markers included
    rel = "reports/slime-11-11"
    assert (wt / rel / "QUESTIONS.md").read_bytes() == (window.report_dir / "QUESTIONS.md").read_bytes()
    mine, its = (json.loads((d / "decisions.json").read_text()) for d in (wt / rel, window.report_dir))
    assert mine["questions"] == its["questions"] and mine["files"] == its["files"]
    assert mine["window"]["branch"] == FOLLOW_BRANCH

    status = sync_status(wt)  # status (and resolve) find the waiting PR on the follow branch
    assert status.unanswered_decide == ["Q1"] and not status.resolved
    [row] = [r for r in load_ledger(wt) if r.pr == 11]
    assert row.follow == StepSummary(1, 1, 0, True, row.follow.seconds, "waiting for answers")


def test_rerun_without_answers_stops_again_and_changes_nothing(sc):
    first = run(sc, from_pr=11)
    before = snapshot(first.worktree)
    again = run(sc)
    assert again.stop == first.stop and [o.resumed for o in again.steps] == [True]
    assert snapshot(first.worktree) == before


def test_answers_resume_there_and_the_end_equals_the_whole_window_with_the_same_answers(sc):
    wt = run(sc, from_pr=11).worktree
    assert answer(wt, 11) == 1
    second = run(sc)
    assert [(o.label, o.resumed, bool(o.stop)) for o in second.steps] == [
        ("#11", True, False),
        ("#9", False, False),
        ("#12 (+1 direct push)", False, True),
    ]
    assert second.steps[1].summary.person is False  # #9 needed no one
    assert answer(wt, 12) == 2
    third = run(sc)
    assert [o.label for o in third.steps] == ["#12", "#15", "#14", "#13"]  # resumed: named by its PR
    assert third.up_to_date and third.stop is None
    assert subjects(wt)[:3] == [
        "sync(slime #13..#13): follow gate not run",
        "sync(slime #13..#13): resolve",
        "sync(slime #13..#13): 3-way merge",
    ]
    ledger = load_ledger(wt)
    assert [r.follow.person for r in ledger if r.follow] == [True, False, True, False, False, False]
    [push] = [r for r in ledger if r.pr is None]
    assert (push.window, push.follow) == ("slime-12-12", None)  # the direct push went with #12

    window = run_window(sc.upstream, sc.downstream, 13, 11, rules=FakeRules(), translate_fn=fake_translate)
    doc_path = window.report_dir / "decisions.json"
    doc = json.loads(doc_path.read_text())
    for q in doc["questions"]:
        if q["tier"] == "Decide":
            q["decision"] = "theirs"
    doc_path.write_text(json.dumps(doc))
    resolve_branch(window.worktree)
    assert mirrored_tree(wt) == mirrored_tree(window.worktree)


def test_until_max_and_a_finished_until(sc):
    wt = run(sc, from_pr=11).worktree
    answer(wt, 11)
    done = run(sc, until=9)
    assert [o.label for o in done.steps] == ["#11", "#9"] and done.up_to_date
    assert run(sc, until=9).steps == []  # mirrored already: nothing to do
    stopped = run(sc, max_prs=1)
    assert [o.label for o in stopped.steps] == ["#12 (+1 direct push)"] and stopped.stop
    answer(wt, 12)
    capped = run(sc, max_prs=2)
    assert [o.label for o in capped.steps] == ["#12", "#15"] and capped.left == 2
    assert not capped.up_to_date and capped.stop is None
    with pytest.raises(SyncError, match=r"--until 99: PR #99 is not merged"):
        run(sc, until=99)


def test_dry_run_says_what_it_would_do_and_writes_nothing(sc):
    before = snapshot(sc.downstream)
    first = plan(sc.upstream, sc.downstream, FollowOptions(from_pr=11))
    assert snapshot(sc.downstream) == before
    assert not first.site.branch_exists and first.pending is None
    assert [s.label for s in first.upcoming.steps] == [
        "#11",
        "#9",
        "#12 (+1 direct push)",
        "#15",
        "#14",
        "#13",
    ]
    wt = run(sc, from_pr=11).worktree
    before = snapshot(wt)
    waiting = plan(sc.upstream, sc.downstream, FollowOptions(max_prs=2))
    assert (waiting.pending.pr, waiting.open_decide) == (11, 1)
    assert [s.label for s in waiting.upcoming.steps] == ["#9", "#12 (+1 direct push)"]
    answer(wt, 11)
    assert plan(sc.upstream, sc.downstream, FollowOptions()).open_decide == 0
    git(wt, "checkout", "-q", "--", "reports")  # back to the unanswered file
    assert snapshot(wt) == before


def test_a_person_may_resolve_on_the_follow_branch_then_follow_gates_and_goes_on(sc):
    wt = run(sc, from_pr=11).worktree
    answer(wt, 11)
    done = resolve_branch(wt)  # `vime-sync resolve --no-gate` in the follow worktree
    assert done.gate_passed is None
    result = run(sc, until=9)
    assert [(o.label, o.resumed) for o in result.steps] == [("#11", True), ("#9", False)]
    assert subjects(wt)[3:5] == ["sync(slime #11..#11): follow gate not run", "sync(slime #11..#11): resolve"]


def test_the_downstream_moving_on_is_followed_and_divergence_is_refused(sc):
    wt = run(sc, from_pr=11).worktree
    answer(wt, 11)
    run(sc, until=9)
    git(sc.downstream, "merge", "-q", "--ff-only", FOLLOW_BRANCH)  # main takes the branch, then moves on
    commit(
        sc.downstream,
        "vime: own work",
        {"vime/a.py": "# vime's own header\n" + (wt / "vime/a.py").read_text()},
    )
    head = git(sc.downstream, "rev-parse", "HEAD")
    stopped = run(sc)  # #12 stops; it was merged onto main's new commit
    assert stopped.steps[0].label.startswith("#12")
    assert git(wt, "rev-parse", "HEAD~1") == head
    commit(sc.downstream, "vime: more", {"vime/local_only.py": "LOCAL = 2\n"})
    with pytest.raises(SyncError, match=r"have both moved on; merge HEAD into sync/follow"):
        run(sc)


def test_dirty_follow_worktree_is_refused(sc):
    wt = run(sc, from_pr=11).worktree
    answer(wt, 11)
    run(sc, until=11)
    (wt / "vime/a.py").write_text("edited by hand\n")
    before = snapshot(wt)
    with pytest.raises(SyncError, match=r"has uncommitted changes \(vime/a.py\); commit or discard them"):
        run(sc)
    assert snapshot(wt) == before


def test_ledger_follow_cell_round_trips_and_a_bad_one_is_one_line():
    summary = StepSummary(2, 5, 1, True, 3.25, "failed: 1 new")
    assert StepSummary.parse(summary.cell(), "x") == StepSummary(2, 5, 1, True, 3.2, "failed: 1 new")
    line = "\t".join(["a" * 40, "12", "slime-12-12", "mirrored", "-", "t", "r", summary.cell()])
    assert parse_ledger(line)[0].follow.gate == "failed: 1 new"
    with pytest.raises(LedgerError, match=r"line 1: follow cell 'soon' is not a follow summary"):
        parse_ledger(line.rsplit("\t", 1)[0] + "\tsoon")


# --- all or nothing, per PR ------------------------------------------------------------------------

FAULTS = ("exception", "SIGINT", "SIGTERM")
INNER = [name for name, _ in RESOLVE_STAGES if name != "gate"]  # the gate stage of resolve is not used


def inject(at: str, fault: str) -> None:
    def hook(stage: str) -> None:
        if stage != at:
            return
        if fault == "exception":
            raise Injected(f"injected at {stage}")
        os.kill(os.getpid(), signal.SIGINT if fault == "SIGINT" else signal.SIGTERM)
        time.sleep(1)
        raise AssertionError("signal not delivered")

    BOUNDARY_HOOKS.append(hook)


def expected(fault: str) -> type[BaseException]:
    return Injected if fault == "exception" else FollowInterrupted


def _at_11(sc) -> Path:
    """The follow branch with #11 finished (answered), #9 next (it needs no person)."""
    wt = run(sc, from_pr=11).worktree
    answer(wt, 11)
    run(sc, until=11)
    return wt


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("stage", [name for name, _ in NEW_PR_STAGES] + INNER)
def test_a_fault_in_a_new_pr_keeps_the_prs_before_it_and_nothing_of_it(sc, stage, fault):
    wt = _at_11(sc)
    before, main_before = snapshot(wt), snapshot(sc.downstream)
    inject(stage, fault)
    with pytest.raises(expected(fault)) as err:
        run(sc)
    if fault != "exception":
        assert err.value.in_progress == "#9" and err.value.result.steps == []
    assert snapshot(wt) == before and snapshot(sc.downstream) == main_before
    assert children() == []
    BOUNDARY_HOOKS.clear()
    assert [o.label for o in run(sc, until=9).steps] == ["#9"]


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("stage", ["follow branch", "merge commit"])
def test_a_fault_in_the_first_pr_leaves_no_branch_and_no_worktree(sc, stage, fault):
    before = snapshot(sc.downstream)
    inject(stage, fault)
    with pytest.raises(expected(fault)):
        run(sc, from_pr=11)
    assert snapshot(sc.downstream) == before
    assert not (sc.downstream.parent / "downstream-sync-follow").exists()
    BOUNDARY_HOOKS.clear()
    assert run(sc, from_pr=11).steps[0].label == "#11"


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("stage", [name for name, _ in ANSWERS_STAGES] + INNER)
def test_a_fault_while_resuming_keeps_the_waiting_pr_and_its_answers(sc, stage, fault):
    wt = run(sc, from_pr=11).worktree
    answer(wt, 11)
    before = snapshot(wt)  # the reviewer's answers included
    inject(stage, fault)
    with pytest.raises(expected(fault)):
        run(sc)
    assert snapshot(wt) == before
    BOUNDARY_HOOKS.clear()
    assert [o.label for o in run(sc, until=11).steps] == ["#11"]


def test_a_fault_after_some_prs_keeps_those_prs(sc):
    wt = _at_11(sc)
    calls = []

    def third_translate(stage: str) -> None:
        if stage == "translate":
            calls.append(stage)
            if len(calls) == 2:  # #9 done, #12 in progress
                raise Injected("in #12")

    BOUNDARY_HOOKS.append(third_translate)
    with pytest.raises(Injected):
        run(sc)
    assert subjects(wt)[0] == "sync(slime #9..#9): follow gate not run"
    assert git(wt, "status", "--porcelain") == ""


# --- the follow gate: the gate's static checks, on what a PR changed -------------------------------


def test_changed_file_checks_on_every_file_equal_the_gates_static_checks(tmp_path):
    """The fast path (per file, flags from the whole tree) against the gate's own run on the tree."""
    from window_helpers import init_repo

    from sync.follow.gate import ChangedChecks
    from sync.gate.regression import static_probe

    repo = init_repo(tmp_path / "tree")
    commit(repo, "a tree with one failure of each kind", {
        "vime/ok.py": "import os\n",
        "vime/broken.py": "def f(:\n    pass\n",
        "vime/uses_sglang.py": "from sglang.srt.utils import kill_process_tree\n",
        "vime/args.py": "def add(p):\n    p.add_argument('--vllm-own-flag', type=int, default=1)\n",
        "vime/calls.py": "import requests\n\n\ndef f(url):\n    return requests.post(f'{url}/generate', json={'text': 'x'})\n",
        "scripts/run.sh": "python train.py --vllm-own-flag 2 --vllm-no-such-flag 3 --sglang-mem-fraction-static 0.5\n",
        "docs/merge.md": "<<<<<<< ours\na\n=======\nb\n>>>>>>> theirs\n",
        "vime/utils/types.py": "class Sample:\n    pass\n",
        "vime/uses.py": "from vime.utils.types import Sample, Nope\nimport vime.missing\n",
    })  # fmt: skip
    files = git(repo, "ls-files").splitlines()
    gate = static_probe(repo)("HEAD")
    fast = ChangedChecks(repo)("HEAD", files)
    assert sorted(fast) == sorted(gate)
    assert {k[0] for k in fast} >= {"compile", "sglang-import", "vllm-flag", "conflict-marker", "vime-import"}
    assert not any("own-flag" in k[2] for k in fast)  # defined in vime/args.py: known to the script check


def test_the_gate_of_a_pr_names_only_what_it_broke(tmp_path):
    from window_helpers import init_repo

    from sync.follow.gate import StepGate

    repo = init_repo(tmp_path / "tree")
    before = commit(repo, "translated code with failures of its own", {
        "vime/a.py": "from sglang.srt.utils import x\n", "vime/b.py": "B = 1\n", "vime/c.py": "C = 1\n",
    })  # fmt: skip
    after = commit(
        repo, "a PR", {"vime/b.py": "B = (\n", "vime/c.py": "C = 2\n", "reports/r.md": "<<<<<<< x\n"}
    )
    result = StepGate(repo).judge(before, after, 42)
    assert [(f.check, f.files, f.prs) for f in result.new] == [("compile", ["vime/b.py"], [42])]
    assert result.preexisting == [] and result.fixed == []  # vime/a.py's own failure: not its business
    fixed = commit(repo, "a fix", {"vime/b.py": "B = 2\n"})
    again = StepGate(repo).judge(before, fixed, 42)
    assert again.passed and again.notes == [
        "static checks on the 2 file(s) the PR changed, before and after it"
    ]


_KILLED = """
import os, signal, sys
sys.path.insert(0, "tests")
from pathlib import Path
from window_helpers import FakeRules, fake_translate
from sync.follow.run import FollowOptions, follow
from sync.window.transaction import BOUNDARY_HOOKS
at = sys.argv[3]
BOUNDARY_HOOKS.append(lambda stage: stage == at and os.kill(os.getpid(), signal.SIGKILL))
follow(Path(sys.argv[1]), Path(sys.argv[2]), FollowOptions(gate=False), rules=FakeRules(), translate_fn=fake_translate)
"""


@pytest.mark.parametrize("stage", ["auto-resolve", "record", "follow gate"])
def test_a_follow_killed_by_sigkill_is_repaired_to_the_pr_before(sc, stage):
    """Killed after its commit 1 (or inside resolve, or before the gate's commit): the undo log on
    disk takes the follow branch back to the PR before."""
    import subprocess
    import sys

    from typer.testing import CliRunner

    from sync.cli import app

    wt = _at_11(sc)
    before = snapshot(wt)
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED, str(sc.upstream), str(sc.downstream), stage],
        capture_output=True,
        timeout=120,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert snapshot(wt) != before  # half-made: the journal knows how to undo it
    with pytest.raises(SyncError, match=r"was killed in stage .*vime-sync follow --repair"):
        run(sc)
    common = ["--upstream", str(sc.upstream), "--downstream", str(sc.downstream)]
    repaired = CliRunner().invoke(app, ["follow", *common, "--repair", "--dry-run"])
    assert repaired.exit_code == 0, repaired.output
    assert "repaired: undid" in repaired.output
    assert snapshot(wt) == before
    assert [o.label for o in run(sc, until=9).steps] == ["#9"]


def test_upcoming_steps_in_merge_order_with_direct_pushes_folded_in(sc, tmp_path):
    from window_helpers import init_repo

    from sync.follow.steps import upcoming

    steps = upcoming(sc.upstream, sc.cutoff)
    assert [s.label for s in steps.steps] == ["#11", "#9", "#12 (+1 direct push)", "#15", "#14", "#13"]
    assert [c.subject for c in steps.steps[2].pushes] == ["direct push: bump ci"]
    assert [s.pr for s in upcoming(sc.upstream, sc.cutoff, until=12).steps] == [11, 9, 12]
    assert upcoming(sc.upstream, sc.cutoff, until=10).until_done  # the cutoff's own PR: mirrored already
    with pytest.raises(SyncError, match=r"the cutoff 0000000000 is not on the first-parent history"):
        upcoming(sc.upstream, "0" * 40)
    up = init_repo(tmp_path / "tip")
    base = commit(up, "base (#1)", {"a.txt": "a\n"})
    commit(up, "feature (#2)", {"a.txt": "b\n"})
    commit(up, "hotfix pushed straight to main", {"a.txt": "c\n"})
    tail = upcoming(up, base)
    assert [s.pr for s in tail.steps] == [2] and [c.subject for c in tail.waiting] == [
        "hotfix pushed straight to main"
    ]
