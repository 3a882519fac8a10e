"""The file -> PRs map that both `vime-sync gate` and resolve's gate read (sync.gate.file_prs)."""

from __future__ import annotations

import json

import pytest

from sync.gate.file_prs import FilePRsError, load_file_prs


def test_decisions_json_keeps_direct_pushes_by_their_short_sha(tmp_path):
    doc = {"files": {"vime/a.py": {"prs": [115, "3c194445"]}, "README.md": {"prs": []}, "odd": "x"}}
    (tmp_path / "decisions.json").write_text(json.dumps(doc))
    mapping, note = load_file_prs(tmp_path, None)
    assert mapping == {"vime/a.py": [115, "3c194445"], "README.md": []}
    assert note is None


def test_file_prs_json_wins_and_an_explicit_file_wins_over_both(tmp_path):
    (tmp_path / "decisions.json").write_text(json.dumps({"files": {"a.py": {"prs": [1]}}}))
    (tmp_path / "file_prs.json").write_text(json.dumps({"a.py": [2]}))
    assert load_file_prs(tmp_path, None)[0] == {"a.py": [2]}
    explicit = tmp_path / "mine.json"
    explicit.write_text(json.dumps({"a.py": [3]}))
    assert load_file_prs(tmp_path, explicit)[0] == {"a.py": [3]}


def test_no_map_is_a_note_and_a_broken_one_is_one_line(tmp_path):
    mapping, note = load_file_prs(tmp_path, None)
    assert mapping == {} and note is not None and "name files but not PRs" in note
    (tmp_path / "decisions.json").write_text("{not json")
    with pytest.raises(FilePRsError, match=r"decisions.json is not valid JSON"):
        load_file_prs(tmp_path, None)
