"""The names of vime-sync's artefacts read back what they wrote (sync.model.names)."""

from __future__ import annotations

from sync.model.names import (
    SUBJECT_PREFIX,
    branch_name,
    follow_gate_subject,
    label_of_name,
    merge_subject,
    parse_per_pr_subject,
    parse_window_name,
    per_pr_subject,
    report_dir,
    resolve_subject,
    window_label,
    window_name,
    window_name_of_branch,
    window_span,
)


def test_window_name_branch_and_label_round_trip():
    assert window_name(2014, 2125) == "slime-2014-2125"
    assert parse_window_name(window_name(2014, 2125)) == (2014, 2125)
    assert report_dir(111, 122) == "reports/slime-111-122"
    assert window_name_of_branch(branch_name(111, 122)) == "slime-111-122"
    assert window_name_of_branch("sync/follow") is None
    assert window_name_of_branch("main") is None
    assert parse_window_name("slime-1-x") is None
    assert label_of_name(window_name(5, 9)) == window_label(5, 9) == "slime #5..#9"
    assert merge_subject(window_label(5, 9)) == "sync(slime #5..#9): 3-way merge"
    assert resolve_subject(window_label(5, 9)) == "sync(slime #5..#9): resolve"
    assert follow_gate_subject(window_label(7, 7), "passed") == "sync(slime #7..#7): follow gate passed"
    assert all(s.startswith(SUBJECT_PREFIX) for s in (merge_subject("x"), resolve_subject("x")))
    assert window_span(window_name(5, 9)) == "5-9"


def test_per_pr_subject_round_trip_for_a_pr_and_a_direct_push():
    subject = per_pr_subject(111, 122, 3, 12, 115, "0123456789abcdef", "Handle aborted requests")
    assert subject == "sync(slime #111..#122) 3/12: #115 Handle aborted requests"
    parsed = parse_per_pr_subject(subject)
    assert parsed is not None
    assert (parsed.window, parsed.pr, parsed.ref, parsed.label) == ("slime-111-122", 115, "#115", 115)
    push = parse_per_pr_subject(per_pr_subject(111, 122, 10, 12, None, "3c194445aa", "Update README"))
    assert push is not None
    assert (push.pr, push.ref, push.label) == (None, "3c194445", "3c194445")
    assert parse_per_pr_subject(merge_subject(window_label(111, 122))) is None
    assert parse_per_pr_subject(resolve_subject(window_label(111, 122))) is None
