"""What a window's reports say about PRs around it and about each PR: numbered in the range but
merged before the cutoff, and a ledger row whose files hold another PR's conflict."""

from __future__ import annotations

from window_helpers import commit, init_repo

from sync.ledger import window_rows
from sync.merge.filemerge import FileOutcome
from sync.reports.context import ReportContext
from sync.reports.summary import render_summary
from sync.window.history import UpstreamCommit, Window, resolve_window
from sync.window.messages import merge_message


def test_prs_numbered_in_the_range_but_merged_before_the_cutoff_are_named(tmp_path):
    up = init_repo(tmp_path / "up")
    commit(up, "first (#1)", {"a.py": "A = 1\n"})
    commit(up, "early feature (#5)", {"a.py": "A = 2\n"})
    commit(up, "cutoff fix (#3)", {"a.py": "A = 3\n"})
    commit(up, "in window (#4)", {"a.py": "A = 4\n"})
    commit(up, "tip (#6)", {"a.py": "A = 6\n"})
    window = resolve_window(up, to_pr=6, from_pr=4)
    assert [c.pr for c in window.commits] == [4, 6]
    assert [c.pr for c in window.early] == [5]
    message = merge_message(window, [], [], "reports/slime-4-6")
    assert "merged before the cutoff (already in the base, not in this window): #5" in message
    summary = render_summary(ReportContext(window, "sync/slime-4-6", []))
    section = summary.split(
        "### Numbered inside the range but merged before the cutoff (already in the base)"
    )[1]
    assert section.split("\n##")[0].strip().startswith("- #5 early feature")
    assert [c.pr for c in resolve_window(up, to_pr=6, from_pr=6).early] == []


def test_a_mirrored_row_does_not_read_as_a_conflict_it_did_not_cause():
    mine = UpstreamCommit("a" * 40, "tidy (#10)", "x", "2026-01-01", 10, ("slime/x.py", "slime/y.py"))
    other = UpstreamCommit("b" * 40, "feature (#11)", "x", "2026-01-02", 11, ("slime/x.py",))
    window = Window(10, 11, "c" * 40, "b" * 40, [mine, other])
    outcomes = [
        FileOutcome("vime/x.py", "slime/x.py", "conflict", conflicts=1),
        FileOutcome("vime/y.py", "slime/y.py", "theirs"),
    ]

    class Asked:  # a conflict question whose hunk per-hunk provenance puts on #11 only
        kind, prs, id = "conflict", [11], "Q1"

    rows = window_rows(window, "slime-10-11", outcomes, questions=[Asked()])
    assert (rows[0].disposition, rows[1].disposition) == ("mirrored", "review")
    assert "conflict" not in rows[0].reason.split(";")[0]
    assert rows[0].reason == "1 theirs; merged into vime/x.py, whose questions come from other PRs' changes"
    assert rows[1].reason.startswith("1 conflict; questions Q1")


def test_stage_times_are_recorded_and_only_asked_for_in_summary(tmp_path):
    from window_helpers import FakeRules, build_scenario, fake_translate

    from sync.window import run_window

    sc = build_scenario(tmp_path / "plain")
    result = run_window(
        sc.upstream, sc.downstream, to_pr=14, from_pr=11, rules=FakeRules(), translate_fn=fake_translate
    )
    assert list(result.timings) == [
        "checks",
        "translate",
        "merge",
        "provenance",
        "reports",
        "worktree",
        "commit",
    ]
    assert all(s >= 0 for s in result.timings.values()) and sum(result.timings.values()) <= result.seconds
    assert (
        "Stage times" not in (result.report_dir / "SUMMARY.md").read_text()
    )  # the same run, the same commit
    sc = build_scenario(tmp_path / "timed")
    timed = run_window(
        sc.upstream, sc.downstream, to_pr=14, from_pr=11, rules=FakeRules(), translate_fn=fake_translate,
        timings_in_summary=True, per_pr=True,
    )  # fmt: skip
    assert list(timed.timings) == [
        "checks",
        "translate",
        "worktree",
        "pr commits",
        "provenance",
        "reports commit",
    ]
    section = (timed.report_dir / "SUMMARY.md").read_text().split("## Stage times")[1]
    assert "| translate |" in section and "| pr commits |" in section and "| reports commit |" not in section


def test_provenance_lists_every_version_it_replays_with_one_batch_of_blob_ids(tmp_path):
    from window_helpers import FakeRules, build_scenario, fake_translate

    from sync.window import run_window
    from sync.window.provenance import WindowProvenance, blob_at, blob_ids

    sc = build_scenario(tmp_path)
    result = run_window(
        sc.upstream, sc.downstream, to_pr=14, from_pr=11, rules=FakeRules(), translate_fn=fake_translate
    )
    renamed = next(o for o in result.outcomes if o.upstream_path == "slime/new_name.py")
    translated: list[tuple[str, str]] = []

    def translate(path, oid):
        translated.append((path, oid))
        return fake_translate(path, b"", FakeRules())

    prov = WindowProvenance(sc.upstream, result.window, translate)
    jobs = prov.versions_to_translate([renamed])
    touching = [c for c in result.window.commits if {"slime/new_name.py", "slime/old_name.py"} & set(c.files)]
    assert [c.pr for c in touching] == [12, 15] and len(jobs) == 2
    assert jobs == [("slime/new_name.py", blob_at(sc.upstream, c.sha, "slime/new_name.py")) for c in touching]
    prov._versions(renamed)
    assert translated == jobs  # the replay asks for exactly the versions listed ahead
    specs = [
        (touching[0].sha, "slime/new_name.py"),
        (touching[0].sha, "slime/nowhere.py"),
        (touching[0].sha, "slime"),
    ]
    assert blob_ids(sc.upstream, specs) == {
        specs[0]: jobs[0][1], specs[1]: None, specs[2]: None,  # absent, and a folder, are no blob
    }  # fmt: skip


def test_provenance_translates_without_the_conformance_check():
    from sync.conformance.stage import translate_checked
    from sync.translate import translate_file
    from sync.window.run import text_translator

    assert text_translator(translate_checked) is translate_file
    assert text_translator(translate_file) is translate_file
