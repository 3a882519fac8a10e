"""`vime-sync audit` on small real git repositories and the real translator: after a follow and after
a window (with the same answers) every hunk is accounted for; a hunk dropped by hand, a file frozen
at an older mirror and a file upstream deleted are each named with their PR, and the audit exits 1.
Plus the line replay and the judge as plain functions."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner
from window_helpers import commit, git, init_repo

from sync.audit.accounts import FileFacts, judge
from sync.audit.decided import Answer
from sync.audit.lines import replay
from sync.audit.run import audit
from sync.cli import app
from sync.follow.run import FollowOptions, follow
from sync.rules import load_rules
from sync.translate import translate_file
from sync.window import run_window
from sync.window.resolve import resolve_branch

A0 = "def one():\n    return 1\n\n\ndef two():\n    return 2\n\n\ndef four():\n    return 4\n"
A2 = A0.replace("return 2", "return 22") + "\n\ndef three():\n    x = 3\n    return x\n"
A4 = A2.replace("    x = 3\n    return x\n", "    return 3  # simpler\n").replace("return 22", "return 222")
B0 = "LIMIT = 10\nNAME = 'b'\n\n\ndef use():\n    return LIMIT\n"
C0 = "def c():\n    return 'c'\n"
C4 = C0 + "\n\ndef c4():\n    return 'added by #4'\n"
C5 = C4 + "\n\ndef c5():\n    return 'added by #5'\n"
M0 = "def moved():\n    return 'moved'\n"


def build(root: Path) -> tuple[Path, Path]:
    """Upstream PRs #1 (the cutoff) to #5; the downstream = translate(upstream at #1) plus one edit."""
    up = init_repo(root / "slime")
    commit(up, "base (#1)", {
        "slime/utils/a.py": A0, "slime/utils/b.py": B0, "slime/utils/c.py": C0, "slime/utils/moved.py": M0,
        "scripts/old.sh": "#!/bin/bash\necho old launcher\nexit 0\n", ".github/workflows/ci.yml": "on: push\n",
    })  # fmt: skip
    commit(up, "add three (#2)", {"slime/utils/a.py": A2, ".github/workflows/ci.yml": "on: [push]\n"})
    commit(up, "raise the limit, drop the old launcher (#3)", {
        "slime/utils/b.py": B0.replace("LIMIT = 10", "LIMIT = 20"), "scripts/old.sh": None,
    })  # fmt: skip
    commit(up, "simplify three, add c4 (#4)", {"slime/utils/a.py": A4, "slime/utils/c.py": C4})
    commit(up, "add c5, move a module (#5)", {"slime/utils/c.py": C5},
           renames={"slime/utils/moved.py": "slime/utils/moved2.py"})  # fmt: skip
    cutoff = git(up, "rev-parse", "HEAD~4")
    down = init_repo(root / "vime")
    rules = load_rules()
    files: dict[str, bytes | str | None] = {}
    for rel in git(up, "ls-tree", "-r", "--name-only", cutoff).splitlines():
        raw = subprocess.run(
            ["git", "-C", str(up), "show", f"{cutoff}:{rel}"], capture_output=True, check=True
        ).stdout
        t = translate_file(rel, raw, rules)
        if t.dst_path:
            files[t.dst_path] = t.data
    commit(down, "vime at slime #1", files)
    commit(down, "vime: its own limit", {"vime/utils/b.py": B0.replace("LIMIT = 10", "LIMIT = 15  # vime")})
    return up, down


def answer_all(report_dir: Path, choice: str) -> None:
    path = report_dir / "decisions.json"
    doc = json.loads(path.read_text())
    for q in doc["questions"]:
        if q["tier"] == "Decide" and not q.get("decision"):
            q["decision"] = choice
    path.write_text(json.dumps(doc, indent=2) + "\n")


def followed(up: Path, down: Path) -> Path:
    """Follow #2..#5, keeping vime's side of every Decide question (vime's own limit)."""
    result = follow(up, down, FollowOptions(from_pr=2, gate=False))
    while result.stop:
        pr = result.steps[-1].pr
        answer_all(result.worktree / f"reports/slime-{pr}-{pr}", "ours")
        result = follow(up, down, FollowOptions(gate=False))
    assert result.up_to_date
    return result.worktree


@pytest.fixture(scope="module")
def repos(tmp_path_factory):
    root = tmp_path_factory.mktemp("audit")
    up, down = build(root)
    return up, down, followed(up, down)


def by_pr(result) -> dict[tuple[int, str], set[str]]:
    out: dict[tuple[int, str], set[str]] = {}
    for a in result.accounts:
        out.setdefault((a.pr, a.upstream), set()).add(a.category)
    return out


def test_a_followed_range_is_fully_accounted_for(repos):
    up, _down, wt = repos
    result = audit(up, wt, 2, 5)
    assert result.passed, result.omissions
    seen = by_pr(result)
    assert seen[(2, ".github/workflows/ci.yml")] == {"excluded"}
    assert seen[(3, "slime/utils/b.py")] == {"decided"}  # vime kept its own limit
    assert seen[(2, "slime/utils/a.py")] == {"superseded", "present"}  # #4 rewrote two() and three()
    whys = sorted(a.why for a in result.accounts if (a.pr, a.upstream) == (2, "slime/utils/a.py"))
    assert whys == ["by #4", "partly superseded by #4"]
    assert seen[(5, "slime/utils/c.py")] == {"present"}
    [excluded] = [a for a in result.accounts if a.category == "excluded"]
    assert excluded.why.startswith("rule ")
    [decided] = [a for a in result.accounts if a.category == "decided"]
    assert decided.why.startswith("recorded answer slime-3-3 Q")
    assert result.frozen == [] and result.stale == []


def test_a_window_with_the_same_answers_is_fully_accounted_for(repos):
    up, down, _wt = repos
    window = run_window(up, down, 5, 2, worktree=down.parent / "vime-window")
    answer_all(window.report_dir, "ours")
    resolve_branch(window.worktree)
    result = audit(up, window.worktree, 2, 5)
    assert result.passed, result.omissions
    assert by_pr(result)[(3, "slime/utils/b.py")] == {"decided"}


def test_a_dropped_hunk_a_frozen_file_and_a_stale_deletion_are_named(repos, tmp_path):
    up, _down, wt = repos
    planted = tmp_path / "planted"
    git(wt, "worktree", "add", "-q", "-b", "planted", str(planted), "HEAD")
    c = (planted / "vime/utils/c.py").read_text()
    (planted / "vime/utils/c.py").write_text(c.replace("\n\ndef c5():\n    return 'added by #5'\n", ""))
    (planted / "vime/utils/a.py").write_text(A2)  # the mirror of #2, before #4
    (planted / "scripts").mkdir(exist_ok=True)
    (planted / "scripts/old.sh").write_text("#!/bin/bash\necho old launcher\nexit 0\n")
    git(planted, "add", "-A")
    git(planted, "commit", "-q", "-m", "planted")
    result = audit(up, planted, 2, 5)
    assert not result.passed
    named = {(a.pr, a.file) for a in result.omissions}
    assert named == {(5, "vime/utils/c.py"), (4, "vime/utils/a.py"), (3, "scripts/old.sh")}
    [c5] = [a for a in result.omissions if a.pr == 5]
    assert c5.line == 7 and c5.text == "def c5():"
    # c.py without #5's hunk is exactly the mirror of #4: frozen there too
    assert [(f.file, f.at) for f in result.frozen] == [("vime/utils/a.py", "#2"), ("vime/utils/c.py", "#4")]
    assert [(s.file, s.deleted_by) for s in result.stale] == [("scripts/old.sh", "#3")]

    done = CliRunner().invoke(app, ["audit", "--upstream", str(up), "--downstream", str(planted),
                                    "--from", "2", "--to", "5"])  # fmt: skip
    assert done.exit_code == 1
    assert "omission vime/utils/c.py:7 #5 (slime/utils/c.py)" in done.output
    assert "frozen vime/utils/a.py (slime/utils/a.py): equals upstream's translation at #2" in done.output
    assert "stale scripts/old.sh (scripts/old.sh): deleted upstream by #3" in done.output


def test_a_moved_file_left_at_its_old_path_is_stale(repos, tmp_path):
    up, _down, wt = repos
    planted = tmp_path / "moved"
    git(wt, "worktree", "add", "-q", "-b", "moved-back", str(planted), "HEAD")
    git(planted, "mv", "vime/utils/moved2.py", "vime/utils/moved.py")
    git(planted, "commit", "-q", "-m", "undo the move")
    result = audit(up, planted, 2, 5)
    assert [(s.file, s.deleted_by) for s in result.stale] == [
        ("vime/utils/moved.py", "#5 (moved to slime/utils/moved2.py)")
    ]
    [moved] = result.omissions
    assert (moved.pr, moved.file, moved.why) == (
        5, "vime/utils/moved.py",
        "upstream moved it to slime/utils/moved2.py; the downstream still has it at vime/utils/moved.py",
    )  # fmt: skip


def test_an_audit_past_the_downstream_sync_point_is_refused(repos):
    from sync.model.errors import SyncError

    up, down, wt = repos
    at_3 = git(wt, "log", "--format=%H", "-1", "--grep=slime #3..#3): follow gate")
    with pytest.raises(SyncError, match=r"in step with upstream only up to PR #3 .*audit up to #3, or sync"):
        audit(up, wt, 2, 5, rev=at_3)
    assert audit(up, wt, 2, 3, rev=at_3).passed
    unsynced = audit(up, down, 2, 5)  # main: no state file, so judged against #5, and nothing is there
    assert unsynced.notes == ["the downstream has no state file at HEAD: judged against upstream at #5"]
    assert {a.pr for a in unsynced.omissions} == {2, 3, 4, 5}


def test_replay_names_writers_and_removers():
    r = replay(b"a\nb\nc\n", [(2, b"a\nB\nc\nd\n"), (4, b"a\nB2\nc\nd\n"), (5, None)])
    assert [(h.pr, len(h.added), len(h.removed)) for h in r.hunks] == [
        (2, 1, 1),
        (2, 1, 0),
        (4, 1, 1),
        (5, 0, 4),
    ]
    b_line = r.hunks[0].added[0]
    assert (r.text[b_line], r.removed_by[b_line]) == (b"B\n", 4)
    assert r.final == []


def test_a_removed_line_that_exists_elsewhere_downstream_is_not_carried():
    """A deletion counts as carried only where it happened (a common line elsewhere is no evidence)."""
    base = b"def get():\n    with s() as x:\n        return x\n\n\ndef post():\n    with s() as x:\n        return x\n"
    new = base.replace(
        b"def post():\n    with s() as x:\n        return x\n", b"def post():\n    return retry()\n"
    )
    r = replay(base, [(7, new)])
    down = new.replace(b"def post():", b"def put():\n    with s() as x:\n        return x\n\n\ndef post():")
    accounts = judge(r, FileFacts("slime/x.py", "vime/x.py", down), {7})
    assert {a.category for a in accounts} == {"present"}
    kept = judge(r, FileFacts("slime/x.py", "vime/x.py", base), {7})
    assert {a.category for a in kept} == {"omission"}
    ours = Answer("slime-7-7", "Q1", "conflict", "vime/x.py", "ours", (b"    with s() as x:", b"        return x"),
                  (b"    return retry()",))  # fmt: skip
    decided = judge(r, FileFacts("slime/x.py", "vime/x.py", base, answers=[ours]), {7})
    assert {a.category for a in decided} == {"decided"} and decided[
        0
    ].why == "recorded answer slime-7-7 Q1 (ours)"
