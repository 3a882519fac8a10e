"""Property tests (hypothesis) for the merge: no generated pair of downstream and upstream edits
loses a downstream change without a Decide question.

A file's base comes from a small alphabet of lines (so edits collide often); ours and theirs each
apply random replacements, insertions, deletions and re-indents. The merge runs as the window runs
it (``merge_contents``: git merge-file, then the per-definition pass for Python), the questions as
the reports ask them, and every Confirm/Settled default is applied as ``resolve`` would. Unless a
Decide question was asked, every line the downstream changed must still be in the result, where
"changed" ignores only the whitespace the file type does not care about (``sync.merge.whitespace``).
"""

from __future__ import annotations

import difflib
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sync.merge.filemerge import merge_contents
from sync.merge.textmerge import parse_hunks, replace_hunks
from sync.merge.whitespace import kind_of, meaningful_lines
from sync.reports.questions import build_questions
from sync.window.translation import Translated

LINES = ["def f():", "    x = 1", "    return x", "y = 2", "", "    pass", "z = [1,  2]", "# note"]
LABELS = ("ours (vime)", "base", "theirs")

line = st.sampled_from(LINES)
edit = st.tuples(
    st.sampled_from(["replace", "insert", "delete", "indent", "dedent"]), st.integers(0, 9), line
)


def apply_edits(base: list[str], edits: list[tuple[str, int, str]]) -> list[str]:
    out = list(base)
    for op, at, text in edits:
        i = at % (len(out) + 1)
        if op == "insert" or not out:
            out.insert(i, text)
            continue
        i = min(i, len(out) - 1)
        if op == "replace":
            out[i] = text
        elif op == "delete":
            del out[i]
        elif op == "indent":
            out[i] = "    " + out[i]
        elif op == "dedent":
            out[i] = out[i][4:] if out[i].startswith("    ") else out[i]
    return out


def as_bytes(lines: list[str]) -> bytes:
    return "".join(f"{x}\n" for x in lines).encode()


def norm(data: bytes, path: str) -> list[bytes]:
    """The lines as the file type reads them: only the whitespace it gives no meaning is dropped."""
    return meaningful_lines(data, kind_of(path))


def downstream_changes(base: bytes, ours: bytes, path: str) -> Counter[bytes]:
    """Lines the downstream inserted or rewrote (after normalising what the file type ignores)."""
    b, o = norm(base, path), norm(ours, path)
    changed: Counter[bytes] = Counter()
    for tag, _i1, _i2, j1, j2 in difflib.SequenceMatcher(a=b, b=o, autojunk=False).get_opcodes():
        if tag in ("insert", "replace"):
            changed.update(x for x in o[j1:j2] if x)
    return changed


def resolved_with_defaults(data: bytes, marker_size: int, defaults: dict[int, str]) -> bytes:
    hunks = parse_hunks(data, marker_size)
    side = {
        h.index: {"ours": h.ours, "theirs": h.theirs, "both": h.ours + h.theirs}[defaults[h.index]]
        for h in hunks
    }
    return replace_hunks(data, side, marker_size)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    path=st.sampled_from(
        [
            "vime/m.py",
            "conf.yaml",
            "Makefile",
            "docs/notes.md",
            "scripts/run.sh",
            "Dockerfile",
            "c.toml",
            "c.json",
        ]
    ),
    base=st.lists(line, min_size=1, max_size=7),
    ours_edits=st.lists(edit, min_size=1, max_size=4),
    theirs_edits=st.lists(edit, min_size=1, max_size=4),
)
def test_no_downstream_change_is_lost_without_a_decide_question(path, base, ours_edits, theirs_edits):
    base_b = as_bytes(base)
    ours_b = as_bytes(apply_edits(base, ours_edits))
    theirs_b = as_bytes(apply_edits(base, theirs_edits))
    out = merge_contents(
        path,
        path,
        ours_b,
        Translated(path, path, base_b, "text"),
        Translated(path, path, theirs_b, "text"),
        LABELS,
    )
    questions = build_questions([out], lambda _o: [], lambda _key: None)
    hunk_questions = [q for q in questions if q.hunk is not None]
    if any(q.tier == "Decide" for q in hunk_questions):
        return  # a human is asked: nothing is decided for them
    assert out.data is not None
    final = out.data
    if out.outcome in ("conflict", "add_add"):
        final = resolved_with_defaults(out.data, out.marker_size, {q.hunk: q.default for q in hunk_questions})
    kept = Counter(x for x in norm(final, path) if x)
    lost = downstream_changes(base_b, ours_b, path) - kept
    assert not lost, f"{out.outcome}: downstream lines lost without a Decide question: {sorted(lost)}"


@settings(max_examples=60, deadline=None)
@given(base=st.lists(line, min_size=1, max_size=6), edits=st.lists(edit, min_size=1, max_size=3))
def test_a_file_only_upstream_changed_comes_through_exactly_as_theirs(base, edits):
    base_b, theirs_b = as_bytes(base), as_bytes(apply_edits(base, edits))
    out = merge_contents(
        "vime/m.py", "slime/m.py", base_b, Translated("m", "m", base_b, "text"), Translated("m", "m", theirs_b, "text"),
        LABELS,
    )  # fmt: skip
    assert out.data == theirs_b or (base_b == theirs_b and out.data == base_b)
