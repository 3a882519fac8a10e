"""Whitespace judged by what it means in each kind of file, line endings and file modes as outcomes of
their own: no downstream or upstream change is dropped by a "whitespace only" default.

Only leading indentation where the format ignores it, trailing spaces and blank lines may be
"whitespace only"; a space added or removed between two tokens or inside a quoted string is
content in every kind (shell, Dockerfile, Markdown, TOML, JSON, Python). Real git repositories and
the real window and resolve; the stand-in translator (these files carry no SGLang to translate).
"""

from __future__ import annotations

import json
import os
import stat

import pytest
from window_helpers import FakeRules, commit, fake_translate, git, init_repo

from sync.reports.questions import propose_hunk_default
from sync.window import SyncError, run_window
from sync.window.resolve import resolve_branch


def _window(tmp_path, path, base, ours, theirs, *, theirs_mode=None):
    """Upstream changes ``path`` base -> theirs in PR #2; the downstream changed it base -> ours."""
    up = init_repo(tmp_path / "up")
    commit(up, "base (#1)", {path: base})
    if theirs_mode:
        (up / path).write_bytes(theirs if isinstance(theirs, bytes) else theirs.encode())
        os.chmod(up / path, theirs_mode)
        git(up, "add", path)
        git(up, "commit", "-q", "-m", "change (#2)", date="1700009000 +0000")
    else:
        commit(up, "change (#2)", {path: theirs})
    down = init_repo(tmp_path / "down")
    commit(down, "vime at #1", {path: base})
    commit(down, "vime edit", {path: ours} if ours != base else {})
    return run_window(up, down, 2, 2, rules=FakeRules(), translate_fn=fake_translate)


def _hunk_questions(result, path):
    return [q for q in result.questions if q.file == path and q.hunk is not None]


def _resolve_with_defaults(result):
    """Resolve taking every default: what a reviewer gets by answering nothing."""
    return resolve_branch(result.worktree)


# --- a space between two tokens or inside quotes is content everywhere -------------------------------

CONTENT_CASES = {
    # the downstream's Dockerfile fix: two packages, not one named "ab"
    "docker-downstream": (
        "Dockerfile",
        "FROM base\nRUN pip install a b\n",
        "FROM base\nRUN pip install ab\n",
        "FROM base\nRUN pip install a b c\n",
    ),
    # the downstream's shell fix: `[` needs the space before `]`
    "shell-downstream": (
        "scripts/run.sh",
        'if [ "$m" = "fast"]; then run; fi\n',
        'if [ "$m" = "fast" ]; then run; fi\n',
        'if [ "$m" = "fast"]; then run --quick; fi\n',
    ),
    # the same fix made upstream, while the downstream changed the line otherwise
    "shell-upstream": (
        "scripts/run.sh",
        'if [ "$m" = "fast"]; then run; fi\n',
        'if [ "$m" = "fast"]; then run --local; fi\n',
        'if [ "$m" = "fast" ]; then run; fi\n',
    ),
    "markdown-text": ("docs/a.md", 'Use "a b" here.\n', 'Use "ab" here.\n', 'Use "a b" there.\n'),
    "markdown-code": (
        "docs/b.md",
        "```\nrun --x a b\n```\n",
        "```\nrun --x ab\n```\n",
        "```\nrun --y a b\n```\n",
    ),
    "toml-string": ("conf/p.toml", 'name = "a b"\n', 'name = "ab"\n', 'name = "a b"  # owner\n'),
    "json-string": ("conf/p.json", '{"k": "a b"}\n', '{"k": "ab"}\n', '{"k": "a b", "j": 1}\n'),
    "json-between-tokens": ("conf/q.json", '{"k":1}\n', '{"k": 1}\n', '{"k":2}\n'),
    "python-string": ("tools/p.py", 'X = "a b"\n', 'X = "ab"\n', 'X = "a b"  # upstream\n'),
    # whitespace inside a heredoc, a Python docstring, after a line continuation: content too
    "shell-heredoc-indent": (
        "scripts/h.sh",
        "cat <<EOF\nkey: v\nEOF\n",
        "cat <<EOF\n  key: v\nEOF\n",
        "cat <<EOF\nkey: w\nEOF\n",
    ),
    "python-docstring-trailing": (
        "tools/d.py",
        'def f():\n    """a\n    b"""\n',
        'def f():\n    """a  \n    b"""\n',
        'def f():\n    """a\n    c"""\n',
    ),
    "shell-blank-after-continuation": (
        "scripts/c.sh",
        "run a \\\nb\n",
        "run a \\\n\nb\n",
        "run a \\\nc\n",
    ),
    "markdown-hard-break": (
        "docs/c.md",
        "line one\nline two\n",
        "line one  \nline two\n",
        "line one\nline 2\n",
    ),
}


@pytest.mark.parametrize("case", sorted(CONTENT_CASES))
def test_a_meaningful_space_is_a_decide_question_and_resolve_keeps_it(tmp_path, case):
    path, base, ours, theirs = CONTENT_CASES[case]
    result = _window(tmp_path, path, base, ours, theirs)
    questions = _hunk_questions(result, path)
    assert questions, f"{case}: expected a conflict hunk"
    assert all(q.tier == "Decide" and q.default is None for q in questions), [
        (q.tier, q.summary) for q in questions
    ]
    with pytest.raises(SyncError, match=r"Decide question\(s\) unanswered"):
        _resolve_with_defaults(result)
    # nothing was resolved away: the downstream's lines are still in the file for the reviewer
    text = (result.worktree / path).read_text()
    assert all(line in text for line in ours.splitlines() if line not in base.splitlines())


# --- whitespace that carries no meaning is still "whitespace only" ----------------------------------

LAYOUT_CASES = {
    "shell-reindent": (
        "scripts/r.sh",
        "run a\nrun b\n",
        "  run a  \nrun b\n",
        "run a --x\nrun b\n",
        "theirs",
    ),
    "shell-upstream-trailing": ("scripts/s.sh", "run a\n", "run a --y\n", "run a   \n", "ours"),
    "json-reindent": ("conf/r.json", '{\n"k": 1\n}\n', '{\n    "k": 1\n}\n', '{\n"k": 2\n}\n', "theirs"),
    "toml-blank-lines": ("conf/r.toml", "a = 1\nb = 2\n", "a = 1\n\n\nb = 2\n", "a = 1\nb = 3\n", "theirs"),
    "markdown-one-trailing-space": ("docs/r.md", "one\ntwo\n", "one \ntwo\n", "one!\ntwo\n", "theirs"),
    "python-trailing": ("tools/r.py", "x = 1\ny = 2\n", "x = 1   \ny = 2\n", "x = 10\ny = 2\n", "theirs"),
    "dockerfile-indent": (
        "Dockerfile",
        "RUN a \\\n  b\n",
        "RUN a \\\n      b\n",
        "RUN a \\\n  c\n",
        "theirs",
    ),
}


@pytest.mark.parametrize("case", sorted(LAYOUT_CASES))
def test_layout_whitespace_is_still_a_confirm_with_the_substantive_side(tmp_path, case):
    path, base, ours, theirs, default = LAYOUT_CASES[case]
    result = _window(tmp_path, path, base, ours, theirs)
    questions = _hunk_questions(result, path)
    assert questions and all(q.tier == "Confirm" and q.default == default for q in questions), [
        (q.tier, q.default, q.summary) for q in questions
    ]


def test_kinds_by_path_and_shebang():
    from sync.merge.whitespace import kind_of

    assert kind_of("Dockerfile") == kind_of("docker/Dockerfile.cpu") == "dockerfile"
    assert kind_of("x.sh") == kind_of("bin/tool", b"#!/usr/bin/env bash\necho\n") == "shell"
    assert kind_of("README.md") == "markdown"
    assert kind_of("a.toml") == "toml" and kind_of("a.json") == "json" and kind_of("a.py") == "python"
    assert kind_of("ci.yaml") == "yaml" and kind_of("Makefile") == "exact"
    assert kind_of("notes.txt") == "text"


def test_hunk_default_sees_the_hunk_in_its_file():
    """A trailing space inside a multi-line TOML string is content; on a key line it is not."""
    before = b'doc = """\n'
    after = b'"""\n'
    assert propose_hunk_default(b"a  \n", b"a\n", b"b\n", "toml", before, after) == (None, "")
    assert propose_hunk_default(b"a = 1  \n", b"a = 1\n", b"a = 2\n", "toml")[0] == "theirs"


# --- line endings and modes: outcomes of their own, with a question ---------------------------------


def test_a_downstream_crlf_to_lf_conversion_survives_resolve(tmp_path):
    base = b"a\r\nb\r\nc\r\n"
    result = _window(tmp_path, "docs/w.txt", base, b"a\nb\nc\n", b"a\r\nB\r\nc\r\n")
    [out] = [o for o in result.outcomes if o.path == "docs/w.txt"]
    assert out.outcome == "line_endings"
    assert (result.worktree / "docs/w.txt").read_bytes() == b"a\nB\nc\n"
    [q] = [q for q in result.questions if q.file == "docs/w.txt"]
    assert q.kind == "line_endings" and q.tier == "Confirm" and q.default == "ours"
    _resolve_with_defaults(result)
    assert (result.worktree / "docs/w.txt").read_bytes() == b"a\nB\nc\n"


def test_an_upstream_lf_to_crlf_conversion_meets_a_downstream_edit(tmp_path):
    result = _window(tmp_path, "docs/v.txt", b"a\nb\n", b"a\nb (vime)\n", b"a\r\nb\r\n")
    assert (result.worktree / "docs/v.txt").read_bytes() == b"a\r\nb (vime)\r\n"
    [q] = [q for q in result.questions if q.file == "docs/v.txt"]
    assert q.kind == "line_endings" and q.default == "theirs"
    doc = json.loads((result.report_dir / "decisions.json").read_text())
    [entry] = [e for e in doc["questions"] if e["id"] == q.id]
    entry["decision"] = "ours"  # the reviewer keeps LF
    (result.report_dir / "decisions.json").write_text(json.dumps(doc))
    resolve_branch(result.worktree)
    assert (result.worktree / "docs/v.txt").read_bytes() == b"a\nb (vime)\n"


def test_line_endings_inside_a_conflict_keep_the_markers_parseable(tmp_path):
    result = _window(tmp_path, "docs/u.txt", b"a\r\nb\r\n", b"a\nb ours\n", b"a\r\nb theirs\r\n")
    kinds = sorted(q.kind for q in result.questions if q.file == "docs/u.txt")
    assert kinds == ["conflict", "line_endings"]
    [h] = _hunk_questions(result, "docs/u.txt")
    assert h.tier == "Decide" and h.sides["ours"] == "b ours\n" and h.sides["theirs"] == "b theirs\n"


def test_an_upstream_chmod_without_content_change_lands_with_a_question(tmp_path):
    result = _window(tmp_path, "scripts/go.sh", "echo go\n", "echo go\n", "echo go\n", theirs_mode=0o755)
    [out] = [o for o in result.outcomes if o.path == "scripts/go.sh"]
    assert out.outcome == "mode" and out.mode == "100755"
    assert git(result.worktree, "ls-files", "-s", "scripts/go.sh").startswith("100755")
    [q] = [q for q in result.questions if q.file == "scripts/go.sh"]
    assert q.kind == "mode" and q.tier == "Confirm" and q.default == "theirs"
    doc = json.loads((result.report_dir / "decisions.json").read_text())
    [entry] = [e for e in doc["questions"] if e["id"] == q.id]
    entry["decision"] = "ours"
    (result.report_dir / "decisions.json").write_text(json.dumps(doc))
    resolve_branch(result.worktree)
    assert git(result.worktree, "ls-files", "-s", "scripts/go.sh").startswith("100644")
    assert not stat.S_IXUSR & (result.worktree / "scripts/go.sh").stat().st_mode


def test_an_upstream_chmod_with_a_content_change_keeps_both(tmp_path):
    result = _window(
        tmp_path,
        "scripts/go.sh",
        "echo go\nx\ny\nz\n",
        "echo go (vime)\nx\ny\nz\n",
        "echo go\nx\ny\nZ\n",
        theirs_mode=0o755,
    )
    assert (result.worktree / "scripts/go.sh").read_text() == "echo go (vime)\nx\ny\nZ\n"
    assert git(result.worktree, "ls-files", "-s", "scripts/go.sh").startswith("100755")
    assert [q.kind for q in result.questions if q.file == "scripts/go.sh"] == ["mode"]
