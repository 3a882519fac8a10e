"""Window end to end on real git repositories, with the trivial stand-in translator from window_helpers
(the merge machinery is under test here; test_window_real_translator.py runs the real translator)."""

from __future__ import annotations

import json

import pytest
from window_helpers import BIN1, BIN2, LATIN, OLD_PY, FakeRules, build_scenario, fake_translate, git

from sync.window import run_window


@pytest.fixture(scope="module")
def synced(tmp_path_factory):
    sc = build_scenario(tmp_path_factory.mktemp("outcomes"))
    head_before = git(sc.downstream, "rev-parse", "HEAD")
    result = run_window(
        sc.upstream, sc.downstream, to_pr=14, from_pr=11, rules=FakeRules(), translate_fn=fake_translate
    )
    return sc, result, head_before


def _outcome(result, path):
    return next(o for o in result.outcomes if o.path == path)


def _read(result, path) -> bytes:
    return (result.worktree / path).read_bytes()


def test_branch_and_worktree_leave_user_checkout_alone(synced):
    sc, result, head_before = synced
    assert result.branch == "sync/slime-11-14"
    assert result.worktree == sc.downstream.parent / "downstream-sync-11-14"
    assert git(result.worktree, "rev-parse", "--abbrev-ref", "HEAD") == "sync/slime-11-14"
    assert git(sc.downstream, "rev-parse", "HEAD") == head_before
    assert git(sc.downstream, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert git(sc.downstream, "status", "--porcelain") == ""
    assert git(result.worktree, "rev-parse", "HEAD~1") == head_before


def test_window_lists_prs_in_merge_order(synced):
    _, result, _ = synced
    w = result.window
    assert [c.pr for c in w.commits] == [11, 9, None, 12, 15, 14]
    assert [c.pr for c in w.below_range] == [9]
    assert [c.pr for c in w.late] == [13]
    assert [c.subject for c in w.direct_pushes] == ["direct push: bump ci"]


def test_untouched_downstream_file_is_exactly_theirs(synced):
    _, result, _ = synced
    assert _outcome(result, "vime/a.py").outcome == "theirs"
    assert _read(result, "vime/a.py").decode() == (
        "import os\n\n\ndef a1():\n    return 'vllm'\n\n\ndef a2():\n    return 'vllm 2'\n"
    )
    assert _read(result, "vime/logo.bin") == BIN1 + b"v2"  # binary, downstream untouched
    assert _read(result, "vime/latin.txt") != LATIN  # non-UTF-8 text merged as bytes (see conflict test)


def test_clean_merge_keeps_both_sides(synced):
    _, result, _ = synced
    text = _read(result, "docs/x.md").decode()
    assert _outcome(result, "docs/x.md").outcome == "clean"
    assert "intro line (vime)" in text and "end line (upstream)" in text


def test_structure_aware_pass_settles_adjacent_definitions(synced):
    _, result, _ = synced
    out = _outcome(result, "vime/b.py")
    assert out.outcome == "structural" and out.structural_hunks == 1
    assert _read(result, "vime/b.py").decode() == "def f():\n    return 10\ndef g(x=0):\n    return 2\n"


def test_conflict_keeps_diff3_markers_with_base(synced):
    _, result, _ = synced
    text = _read(result, "vime/c.py").decode()
    assert _outcome(result, "vime/c.py").outcome == "conflict"
    assert "<<<<<<< ours (vime)\nY = 'downstream'\n||||||| base" in text
    assert "\nY = 2\n=======\nY = 'vllm upstream'\n>>>>>>> theirs" in text


def test_non_utf8_conflict_is_merged_as_bytes(synced):
    _, result, _ = synced
    data = _read(result, "vime/latin.txt")
    assert _outcome(result, "vime/latin.txt").outcome == "conflict"
    assert "caf\xe9 vllm\n".encode("latin-1") in data and b"line two (vime)" in data
    assert "third caf\xe9".encode("latin-1") in data


def test_new_deleted_and_not_mirrored(synced):
    _, result, _ = synced
    assert _outcome(result, "vime/new_mod.py").outcome == "new"
    assert _read(result, "vime/new_mod.py") == b"from vllm import x\n\nNEW = 1\n"
    assert _outcome(result, "vime/d.py").outcome == "deleted"
    assert not (result.worktree / "vime/d.py").exists()
    assert _outcome(result, ".github/ci.yml").outcome == "not_mirrored"
    assert not (result.worktree / ".github").exists()
    assert (result.worktree / "vime/local_only.py").read_text() == "LOCAL = 1\n"


def test_modify_delete_never_drops_downstream_work(synced):
    _, result, _ = synced
    assert _outcome(result, "vime/e.py").outcome == "modify_delete"
    assert _read(result, "vime/e.py") == b"E = 'downstream'\n"  # deleted upstream, kept
    assert _outcome(result, "vime/gone.py").outcome == "modify_delete"
    assert not (result.worktree / "vime/gone.py").exists()  # deleted downstream, stays deleted
    assert (result.report_dir / "alternatives/vime/gone.py").read_bytes() == b"G = 2\n"


def test_add_add_and_binary_questions(synced):
    _, result, _ = synced
    assert _outcome(result, "vime/both.py").outcome == "add_add"
    text = _read(result, "vime/both.py").decode()
    assert "BOTH = 'downstream'" in text and "BOTH = 'upstream'" in text and "<<<<<<<" in text
    assert _outcome(result, "vime/icon.bin").outcome == "binary"
    assert _read(result, "vime/icon.bin") == BIN2 + b"-downstream"
    assert (result.report_dir / "alternatives/vime/icon.bin").read_bytes() == BIN2 + b"-upstream"


def test_rename_moves_downstream_edits_to_new_path(synced):
    _, result, _ = synced
    out = _outcome(result, "vime/new_name.py")
    assert out.renamed_from == "vime/old_name.py" and out.outcome == "clean"
    assert not (result.worktree / "vime/old_name.py").exists()
    assert _read(result, "vime/new_name.py").decode() == (
        OLD_PY.replace("'old'", "'old, edited downstream'").replace("sglang tail", "vllm tail v2")
    )


def test_upstream_parse_failure_is_a_question(synced):
    _, result, _ = synced
    assert _read(result, "vime/broken.py") == b"def ok(:\n    return 1\n"
    q = [q for q in result.questions if q.kind == "parse_error"]
    assert [x.file for x in q] == ["vime/broken.py"] and q[0].tier == "Confirm"


def test_questions_cover_every_kind(synced):
    _, result, _ = synced
    kinds = sorted({q.kind for q in result.questions})
    assert kinds == [
        "add_add",
        "binary",
        "conflict",
        "modify_delete",
        "parse_error",
        "unmapped",
        "unsupported",
    ]
    conflict = next(q for q in result.questions if q.file == "vime/c.py")
    assert conflict.tier == "Decide" and conflict.options == ["ours", "theirs", "both", "edit"]
    assert conflict.prs == [11] and conflict.lines[0] == 2
    assert conflict.rules == ["fake.sglang"]  # the rule applied inside the hunk
    latin = next(q for q in result.questions if q.file == "vime/latin.txt")
    assert latin.rules == []  # fake.sglang applied on line 1, outside this hunk
    hit = next(q for q in result.questions if q.kind == "unsupported")
    assert hit.rules == ["fake.pull_weights"] and hit.prs == [14] and hit.default == "keep"
    assert [q.id for q in result.questions] == [f"Q{i}" for i in range(1, len(result.questions) + 1)]


def test_commit_message_and_reports(synced):
    _, result, _ = synced
    message = git(result.worktree, "log", "-1", "--format=%B")
    assert message.startswith("sync(slime #11..#14): 3-way merge\n")
    assert "3 clean merges" not in message and "files with conflict markers" in message
    assert "- #9 older fix" in message and "merged later (not in this window): #13" in message
    names = sorted(p.name for p in result.report_dir.iterdir())
    assert names == ["QUESTIONS.md", "SUMMARY.md", "alternatives", "decisions.json", "review.html"]
    summary = (result.report_dir / "SUMMARY.md").read_text()
    assert "| #9 | older fix |" in summary and "numbered below the range" in summary
    assert "- #13 late feature" in summary and "direct push" in summary
    assert "`vime/c.py` | `slime/c.py` | conflict | #11 |" in summary
    doc = json.loads((result.report_dir / "decisions.json").read_text())
    assert doc["schema"] == "vime-sync/decisions/v1" and len(doc["questions"]) == len(result.questions)
    assert doc["files"]["vime/new_name.py"]["prs"] == [12, 15]
    questions_md = (result.report_dir / "QUESTIONS.md").read_text()
    assert "## Q1 · " in questions_md and "Decide" in questions_md
    state = (result.worktree / ".vime-sync/state.toml").read_text()
    assert f'cutoff = "{result.window.tip}"' in state and "last_pr = 14" in state
    assert str(result.worktree) not in summary + questions_md + json.dumps(doc)


def test_counts(synced):
    _, result, _ = synced
    c = result.counts
    assert (c["conflict"], c["new"], c["deleted"], c["not_mirrored"], c["renamed"]) == (3, 1, 1, 1, 1)
    assert (c["modify_delete"], c["binary"], c["structural"]) == (2, 1, 1)


def test_rename_onto_an_existing_downstream_file_does_not_overwrite_it(tmp_path):
    from window_helpers import commit, init_repo

    up = init_repo(tmp_path / "up")
    commit(up, "base (#1)", {"slime/m.py": "M = 1\n" + "# pad\n" * 10})
    commit(up, "move (#2)", renames={"slime/m.py": "slime/n.py"})
    down = init_repo(tmp_path / "down")
    commit(down, "vime", {"vime/m.py": "M = 1\n" + "# pad\n" * 10, "vime/n.py": "OWN = 'downstream'\n"})
    result = run_window(up, down, to_pr=2, from_pr=2, rules=FakeRules(), translate_fn=fake_translate)
    assert (result.worktree / "vime/n.py").read_text() == "OWN = 'downstream'\n"
    assert (result.worktree / "vime/m.py").read_text().startswith("M = 1\n")
    out = _outcome(result, "vime/m.py")
    assert "where the downstream has its own file" in out.note


def test_a_file_settled_per_statement_is_named_in_every_report_and_not_counted_clean(synced):
    from rich.console import Console

    from sync.window.status import sync_status
    from sync.window.summary_table import print_summary

    _, result, _ = synced
    note = _outcome(result, "vime/b.py").note
    assert "settled per top-level statement" in note and "changed `def f`" in note and "`def g`" in note
    summary = (result.report_dir / "SUMMARY.md").read_text()
    assert "## Settled per top-level statement (no question asked)" in summary
    assert "- `vime/b.py` (" in summary.split("## Settled per top-level statement")[1]
    assert "- `vime/b.py` (" in (result.report_dir / "QUESTIONS.md").read_text()
    doc = json.loads((result.report_dir / "decisions.json").read_text())
    assert doc["files"]["vime/b.py"]["settled"] == note
    assert sync_status(result.worktree).settled == {"vime/b.py": note}
    message = git(result.worktree, "log", "-1", "--format=%B")
    assert f"{result.counts['clean']} clean merges · 1 settled per top-level statement" in message
    console = Console(record=True, width=120)
    print_summary(result, console)
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in console.export_text().splitlines()
            if line.count("│") == 3}  # fmt: skip
    clean = sum(1 for o in result.outcomes if o.outcome in ("theirs", "clean", "unchanged"))
    assert rows["clean merges (incl. taken as theirs)"] == str(clean)
    assert rows["settled per top-level statement (listed in SUMMARY.md)"] == "1"
