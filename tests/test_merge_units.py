"""Unit tests of the merge plumbing: data in, data out (git merge-file is the real one)."""

from __future__ import annotations

import libcst as cst
from hypothesis import given, settings
from hypothesis import strategies as st

from sync.merge.structmerge import struct_merge
from sync.merge.textmerge import choose_marker_size, count_markers, merge3, parse_hunks, replace_hunks
from sync.window.history import pr_number

LABELS = ("ours", "base", "theirs")


def test_pr_number_from_subjects():
    assert pr_number("Fix bug on non-float reward (#2121)") == 2121
    assert pr_number('Revert "rename rollout_ids to group_ids" (#2013)') == 2013
    assert pr_number("Merge pull request #77 from a/b") == 77
    assert pr_number("fix (#12) in the middle") is None
    assert pr_number("direct push") is None


def test_merge3_clean_and_conflict():
    clean = merge3(b"a\nB\nc\nd\ne\n", b"a\nb\nc\nd\ne\n", b"a\nb\nc\nd\nE\n", LABELS)
    assert clean.conflicts == 0 and clean.data == b"a\nB\nc\nd\nE\n"
    conflict = merge3(b"x\n1\n", b"x\n0\n", b"x\n2\n", LABELS)
    assert conflict.conflicts == 1
    [h] = parse_hunks(conflict.data)
    assert (h.ours, h.base, h.theirs, h.start_line) == (b"1\n", b"0\n", b"2\n", 2)
    assert replace_hunks(conflict.data, {0: h.ours + h.theirs}) == b"x\n1\n2\n"


def test_marker_size_grows_past_marker_like_lines():
    ours = b"title\n=======\nmine\n"
    base = b"title\n=======\nbase\n"
    theirs = b"title\n=======\ntheirs\n"
    assert choose_marker_size(ours) == 8
    result = merge3(ours, base, theirs, LABELS)
    assert result.marker_size == 8
    [h] = parse_hunks(result.data, result.marker_size)
    assert h.ours == b"mine\n" and h.theirs == b"theirs\n"
    assert count_markers(result.data, 8) == 1
    assert replace_hunks(result.data, {0: b"x\n"}, 8) == b"title\n=======\nx\n"


def test_hunk_key_is_content_only():
    a = parse_hunks(merge3(b"q\n1\n", b"q\n0\n", b"q\n2\n", LABELS).data)[0]
    b = parse_hunks(merge3(b"other\nfile\n1\n", b"other\nfile\n0\n", b"other\nfile\n2\n", LABELS).data)[0]
    c = parse_hunks(merge3(b"q\n1\n", b"q\n0\n", b"q\n3\n", LABELS).data)[0]
    assert a.key() == b.key() != c.key()


def test_struct_merge_settles_adjacent_definitions():
    base = b"import os\ndef f():\n    return 1\ndef g():\n    return 2\n"
    ours = b"import os\ndef f():\n    return 10\ndef g():\n    return 2\n"
    theirs = b"import os\nimport sys\ndef f():\n    return 1\ndef g(x=0):\n    return 2\ndef h():\n    pass\n"
    assert merge3(ours, base, theirs, LABELS).conflicts > 0
    merged = struct_merge(ours, base, theirs)
    assert merged is not None
    assert (
        merged.data
        == b"import os\nimport sys\ndef f():\n    return 10\ndef g(x=0):\n    return 2\ndef h():\n    pass\n"
    )


def test_struct_merge_refuses_same_definition_both_sides_and_unparsable():
    base = b"def f():\n    return 1\n"
    assert struct_merge(b"def f():\n    return 2\n", base, b"def f():\n    return 3\n") is None
    assert struct_merge(b"def f(:\n", base, b"def f():\n    return 3\n") is None
    assert struct_merge("x = 'caf\xe9'\n".encode("latin-1"), base, base) is None


def test_struct_merge_deletion_by_one_side():
    base = b"def f():\n    return 1\ndef g():\n    return 2\n"
    ours = b"def f():\n    return 10\ndef g():\n    return 2\n"
    theirs = b"def f():\n    return 1\n"
    settled = struct_merge(ours, base, theirs)
    assert settled is not None and settled.data == b"def f():\n    return 10\n"
    assert (settled.ours, settled.theirs) == (("changed `def f`",), ("deleted `def g`",))
    assert struct_merge(b"def f():\n    return 1\ndef g():\n    return 20\n", base, theirs) is None


_defs = st.lists(st.sampled_from(["1", "2", "'a'", "None"]), min_size=3, max_size=3)


@settings(max_examples=40, deadline=None)
@given(_defs, _defs, _defs)
def test_struct_merge_output_always_parses_and_keeps_one_sided_changes(b, o, t):
    def module(vals):
        return "".join(f"def f{i}():\n    return {v}\n" for i, v in enumerate(vals)).encode()

    merged = struct_merge(module(o), module(b), module(t))
    conflicting = any(o[i] != b[i] and t[i] != b[i] and o[i] != t[i] for i in range(3))
    if conflicting:
        assert merged is None
        return
    assert merged is not None
    cst.parse_module(merged.data.decode())
    expected = [o[i] if o[i] != b[i] else t[i] for i in range(3)]
    assert merged.data == module(expected)


def test_struct_merge_keeps_edited_imports_in_place():
    base = b"import os\nimport sys\nimport re\n"
    ours = b"import os  # vime\nimport sys\nimport re\n"
    theirs = b"import os\nimport sys as system\nimport re\n"
    assert merge3(ours, base, theirs, LABELS).conflicts == 1
    merged = struct_merge(ours, base, theirs)
    assert merged is not None and merged.data == b"import os  # vime\nimport sys as system\nimport re\n"


def test_struct_merge_places_a_new_first_statement_before_its_successor():
    merged = struct_merge(b"import os\nY = 2\n", b"import os\nY = 1\n", b"import zz\nimport os\nY = 1\n")
    assert merged is not None and merged.data == b"import zz\nimport os\nY = 2\n"
