"""Safety of a sync run for the fork's team, one case per test (each failed before its fix): downstream work
kept, resolve trusting only commit 1, status per window, no writes in the user's checkout, runs that
can be reproduced, and one line (exit 1) instead of a traceback. Real git repositories and the real
CLI; the stand-in translator where only the merge machinery matters."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest
from typer.testing import CliRunner
from window_helpers import FakeRules, build_scenario, commit, fake_translate, git, init_repo

from sync.cli import app
from sync.reports.questions import propose_hunk_default
from sync.window import SyncError, run_window
from sync.window.resolve import resolve_branch
from sync.window.status import sync_status

runner = CliRunner()


@pytest.fixture
def sc(tmp_path):
    return build_scenario(tmp_path)


def _window(sc, **kw):
    args = {"to_pr": 14, "from_pr": 11, "rules": FakeRules(), "translate_fn": fake_translate} | kw
    return run_window(sc.upstream, sc.downstream, **args)


def _answer_all(result, decision="ours"):
    path = result.report_dir / "decisions.json"
    doc = json.loads(path.read_text())
    for q in doc["questions"]:
        if q["tier"] == "Decide":
            q["decision"] = decision
    path.write_text(json.dumps(doc, indent=2))
    return doc


def _one_line(result, command: str, code: int = 1) -> str:
    """The failure is one line (the last; progress lines of the stages may come before it), no traceback."""
    assert result.exit_code == code, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    mine = [line for line in lines if line.startswith(f"vime-sync {command}: ")]
    assert len(mine) == 1 and lines[-1] == mine[0], result.output
    assert "Traceback" not in result.output
    return mine[0]


# --- downstream work lost: indentation is content --------------------------------------------------

LOOP = "def run(items):\n    for x in items:\n        process(x)\n    finalize(items)\n"


def test_reindented_python_line_is_a_decide_question_not_theirs(tmp_path):
    up = init_repo(tmp_path / "up")
    commit(up, "base (#1)", {"slime/loop.py": LOOP})
    commit(
        up,
        "faster (#2)",
        {"slime/loop.py": LOOP.replace("    finalize(items)", "    finalize(items, fast=True)")},
    )
    down = init_repo(tmp_path / "down")
    commit(down, "vime at #1", {"vime/loop.py": LOOP})
    commit(
        down,
        "finalize per item",
        {"vime/loop.py": LOOP.replace("    finalize(items)", "        finalize(items)")},
    )
    result = run_window(up, down, 2, 2, rules=FakeRules(), translate_fn=fake_translate)
    [q] = [q for q in result.questions if q.file == "vime/loop.py"]
    assert q.tier == "Decide" and q.default is None
    with pytest.raises(SyncError, match=r"Decide question\(s\) unanswered"):
        resolve_branch(result.worktree)
    assert "        finalize(items)" in (result.worktree / "vime/loop.py").read_text()


@pytest.mark.parametrize("path", ["a.py", "ci.yaml", "conf.yml", "Makefile", "rules.mk"])
def test_leading_whitespace_is_content_in_python_yaml_makefiles(path):
    from sync.merge.whitespace import indent_matters, kind_of

    ours, base, theirs = b"a:\n    b\n", b"a:\nb\n", b"a:\nc\n"
    assert indent_matters(path)
    assert propose_hunk_default(ours, base, theirs, kind_of(path)) == (None, "")
    # in a shell script, re-indenting a line is still layout
    assert propose_hunk_default(ours, base, theirs, "shell")[0] == "theirs"
    assert not indent_matters("scripts/x.sh")


def test_rules_can_name_more_indent_significant_files():
    from sync.merge.whitespace import matcher

    class Rules:
        settings: ClassVar[dict] = {"text": {"indent_significant": ["*.in.sh"]}}

    assert matcher(Rules())("tools/env.in.sh") == "text"  # leading whitespace is content there
    assert matcher(Rules())("tools/env.sh") == "shell"


# --- resolve trusts commit 1, not its input ---------------------------------------------------------


def test_empty_questions_and_files_do_not_commit_markers(sc):
    result = _window(sc)
    path = result.report_dir / "decisions.json"
    doc = json.loads(path.read_text())
    doc["questions"], doc["files"] = [], {}
    path.write_text(json.dumps(doc))
    head = git(result.worktree, "rev-parse", "HEAD")
    with pytest.raises(SyncError, match=r"Decide question\(s\) unanswered"):
        resolve_branch(result.worktree)
    assert git(result.worktree, "rev-parse", "HEAD") == head
    assert sum(sync_status(result.worktree).markers.values()) > 0


def test_second_resolve_is_nothing_to_do(sc):
    result = _window(sc)
    _answer_all(result)
    first = runner.invoke(app, ["resolve", "--worktree", str(result.worktree), "--no-gate"])
    assert first.exit_code == 0, first.output
    head = git(result.worktree, "rev-parse", "HEAD")
    again = runner.invoke(app, ["resolve", "--worktree", str(result.worktree), "--no-gate"])
    assert again.exit_code == 0 and "already resolved" in again.output and "Traceback" not in again.output
    assert git(result.worktree, "rev-parse", "HEAD") == head  # no empty duplicate commit


def test_resolve_after_a_gate_that_never_ran_runs_only_the_gate(sc):
    result = _window(sc)
    _answer_all(result)
    resolve_branch(result.worktree)  # commit 2, no gate (as after a crash of the gate)

    def gate(worktree, report_dir):
        (report_dir / "gate.json").write_text('{"passed": true}\n')
        return True

    done = resolve_branch(result.worktree, gate=gate)
    assert done.gate_only and done.gate_passed
    assert git(result.worktree, "log", "--format=%s", "-n", "2").splitlines() == [
        "sync: gate passed",
        "sync(slime #11..#14): resolve",
    ]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], r"holds a JSON list, not an object"),
        ({"schema": "vime-sync/decisions/v1", "window": {"name": "slime-11-14"}, "questions": [{"id": "Q1"}]},
         r"question #1 lacks a text 'key'"),
        (None, r"'edit' must be text or null, not int"),
    ],
)  # fmt: skip
def test_bad_decisions_json_is_one_line(sc, doc, message):
    result = _window(sc)
    path = result.report_dir / "decisions.json"
    if doc is None:
        doc = json.loads(path.read_text())
        doc["questions"][0]["decision"], doc["questions"][0]["edit"] = "edit", 5
    path.write_text(json.dumps(doc))
    out = runner.invoke(app, ["resolve", "--worktree", str(result.worktree)])
    assert _one_line(out, "resolve") and __import__("re").search(message, out.output)


# --- status counts this window's commits only -------------------------------------------------------


def test_status_ignores_an_earlier_merged_windows_resolve(sc):
    first = _window(sc, to_pr=12)
    _answer_all(first)
    resolve_branch(first.worktree)
    git(sc.downstream, "merge", "-q", "--no-edit", "sync/slime-11-12")
    second = _window(sc, to_pr=14, from_pr=None, worktree=sc.downstream.parent / "second")
    assert second.window.from_pr == 13
    st = sync_status(second.worktree)
    assert not st.resolved
    assert all("11..#12" not in s for s in st.commits)


# --- the user's checkout never gets files -----------------------------------------------------------


def test_run_from_a_subfolder_puts_the_worktree_beside_the_checkout(sc):
    result = _window(sc, worktree=None)
    assert result.worktree.parent == sc.downstream.parent
    git(sc.downstream, "worktree", "remove", "--force", str(result.worktree))
    git(sc.downstream, "branch", "-D", result.branch)
    again = run_window(
        sc.upstream, sc.downstream / "vime", 14, 11, rules=FakeRules(), translate_fn=fake_translate
    )
    assert again.worktree == sc.downstream.parent / "downstream-sync-11-14"
    assert git(sc.downstream, "status", "--porcelain", "--untracked-files=all") == ""


def test_worktree_inside_the_checkout_is_refused(sc):
    with pytest.raises(SyncError, match=r"--worktree .* is inside the checkout .*; pass a path outside it"):
        _window(sc, worktree=sc.downstream / "x")
    assert not (sc.downstream / "x").exists()


def test_gate_without_report_on_main_writes_into_git_not_the_tree(sc):
    (sc.downstream / "reports/slime-1-2").mkdir(parents=True)
    (sc.downstream / "reports/slime-1-2/GATE.md").write_text("the merged window's gate\n")
    commit(sc.downstream, "merged window", {"reports/slime-1-2/GATE.md": "the merged window's gate\n"})
    done = subprocess.run(
        [sys.executable, "-m", "sync.cli", "gate", "--worktree", str(sc.downstream / "vime")],
        capture_output=True, text=True, timeout=300, env={**os.environ, "VIME_SYNC_DEBUG": ""},
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    assert git(sc.downstream, "status", "--porcelain", "--untracked-files=all") == ""
    assert (sc.downstream / ".git/vime-sync/gate/GATE.md").is_file()


def test_gate_outside_a_repository_is_refused(tmp_path):
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain/a.py").write_text("x = 1\n")
    out = runner.invoke(app, ["gate", "--worktree", str(tmp_path / "plain")])
    assert "not inside a git worktree" in _one_line(out, "gate")
    assert sorted(p.name for p in (tmp_path / "plain").iterdir()) == ["a.py"]


# --- runs that can be reproduced --------------------------------------------------------------------


def test_uncommitted_rule_table_edits_are_refused(sc):
    commit(sc.downstream, "rules", {"translations/text.toml": 'kind = "text"\n'})
    (sc.downstream / "translations/text.toml").write_text('kind = "text"\n# local tweak\n')
    with pytest.raises(SyncError, match=r"uncommitted edits in translations/ \(translations/text\.toml\)"):
        _window(sc)


def test_cache_temp_files_are_unique_per_write(tmp_path):
    from sync.window.translation import Translated, TranslationCache

    cache = TranslationCache(tmp_path, "fp")
    value = Translated("a.py", "a.py", b"x", "python")
    target = cache._file("a.py", "oid")
    target.parent.mkdir(parents=True)
    target.with_suffix(".tmp").mkdir()  # the old fixed name, taken (as by a second run at once)
    cache.put("a.py", "oid", value)
    assert cache.get("a.py", "oid") == value
    assert [p.name for p in target.parent.iterdir() if p.name.endswith(".tmp") and p.is_file()] == []


# --- translate: exec bits, BOM, symlinks ------------------------------------------------------------


def test_translate_keeps_exec_bits_and_bom_and_never_writes_through_symlinks(tmp_path):
    src = tmp_path / "src"
    (src / "scripts").mkdir(parents=True)
    (src / "scripts/run.sh").write_text("#!/bin/sh\npython -m sglang.launch_server\n")
    (src / "scripts/run.sh").chmod(0o755)
    (src / "slime").mkdir()
    (src / "slime/a.py").write_bytes(b"\xef\xbb\xbffrom sglang.srt.utils import kill_process_tree\n")
    out = tmp_path / "out"
    first = runner.invoke(app, ["translate", str(src), "--out", str(out)])
    assert first.exit_code == 0, first.output
    assert os.access(out / "scripts/run.sh", os.X_OK)
    assert not os.access(out / "vime/a.py", os.X_OK)
    assert (out / "vime/a.py").read_bytes().startswith(b"\xef\xbb\xbf")
    assert b"sglang" not in (out / "vime/a.py").read_bytes()
    outside = tmp_path / "outside.sh"
    outside.write_text("keep me\n")
    (out / "scripts/run.sh").unlink()
    (out / "scripts/run.sh").symlink_to(outside)
    again = runner.invoke(app, ["translate", str(src), "--out", str(out), "--force"])
    assert again.exit_code == 0, again.output
    assert outside.read_text() == "keep me\n" and not (out / "scripts/run.sh").is_symlink()
    (tmp_path / "elsewhere").mkdir()
    for p in (out / "vime").iterdir():
        p.unlink()
    (out / "vime").rmdir()
    (out / "vime").symlink_to(tmp_path / "elsewhere")
    linked = runner.invoke(app, ["translate", str(src), "--out", str(out), "--force"])
    assert "would be written outside it" in _one_line(linked, "translate")
    assert list((tmp_path / "elsewhere").iterdir()) == []


# --- one line, exit 1, no traceback -----------------------------------------------------------------


def _window_cli(sc, *extra: str, env: dict[str, str] | None = None):
    args = ["window", "--upstream", str(sc.upstream), "--downstream", str(sc.downstream), "--to", "14"]
    return runner.invoke(app, [*args, *extra], env=env)


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ("[last_sync\ncutoff = ", r"state\.toml \(committed at HEAD\) is unreadable \(.*\); fix it, or pass --from"),
        ('[last_sync]\ncutoff = "abc"\nlast_pr = "ten"\nrules_hash = "x"\n', r"last_sync\.last_pr must be a int"),
    ],
)  # fmt: skip
def test_corrupt_state_file_is_one_line_and_from_gets_past_it(sc, state, message):
    commit(sc.downstream, "broken state", {".vime-sync/state.toml": state})
    out = _window_cli(sc)
    assert __import__("re").search(message, _one_line(out, "window"))
    assert _window_cli(sc, "--from", "11").exit_code == 0


def test_bad_vime_sync_jobs_is_one_line(sc):
    out = _window_cli(sc, "--from", "11", env={"VIME_SYNC_JOBS": "abc"})
    assert "VIME_SYNC_JOBS='abc' is not a positive whole number" in _one_line(out, "window")
    assert git(sc.downstream, "branch", "--list", "sync/*") == ""


def test_reversed_window_is_refused(sc):
    out = _window_cli(sc, "--from", "12", "--to", "9")
    assert "reversed window: --from 12 is after --to 9" in _one_line(out, "window")


def test_unwritable_worktree_location_is_one_line(sc):
    out = _window_cli(sc, "--from", "11", "--worktree", "/proc/vime-sync-wt")
    _one_line(out, "window")
    assert git(sc.downstream, "branch", "--list", "sync/*") == ""


def test_debug_shows_the_traceback(sc):
    out = runner.invoke(app, ["--debug", "window", "--upstream", str(sc.upstream), "--downstream",
                              str(sc.downstream), "--to", "9", "--from", "12"])  # fmt: skip
    assert out.exit_code != 0 and isinstance(out.exception, SyncError)


def test_invalid_gate_json_in_status_is_one_line(sc):
    result = _window(sc)
    (result.report_dir / "gate.json").write_text("{not json")
    out = runner.invoke(app, ["status", "--worktree", str(result.worktree)])
    assert "gate.json is not valid JSON" in _one_line(out, "status")


@pytest.mark.parametrize(("table", "message"), [(b'kind = "text"\nrule = 5\n', "'rule' must be a list"),
                                                (b'kind = "text"\n# caf\xe9\n', "not UTF-8 text")])  # fmt: skip
def test_bad_rule_table_is_one_line(tmp_path, table, message):
    from sync.rules import DEFAULT_DIRECTORY

    rules = tmp_path / "rules"
    rules.mkdir()
    for f in Path(DEFAULT_DIRECTORY).glob("*.toml"):
        (rules / f.name).write_bytes(f.read_bytes())
    (rules / "text.toml").write_bytes(table)
    out = runner.invoke(app, ["rules", "list", "--rules", str(rules)])
    assert message in out.output and out.exit_code == 1 and "Traceback" not in out.output


def test_demo_dir_on_a_file_is_one_line(tmp_path):
    (tmp_path / "f").write_text("x\n")
    out = runner.invoke(app, ["demo", "--dir", str(tmp_path / "f")])
    assert "is a file; pass a new or empty directory" in _one_line(out, "demo")


def test_vllm_failing_at_import_is_skipped_with_the_reason(monkeypatch):
    """vLLM installed but raising RuntimeError at import: the flag check is skipped, no traceback."""
    from sync.translator import vllm_flags

    class Broken:
        def find_spec(self, name, path=None, target=None):
            if name.startswith("vllm"):
                raise RuntimeError("CUDA driver too old")
            return None

    for name in [n for n in sys.modules if n == "vllm" or n.startswith("vllm.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [Broken(), *sys.meta_path])
    with pytest.raises(
        vllm_flags.VllmNotInstalled, match=r"vLLM fails to import: RuntimeError: CUDA driver too old"
    ):
        vllm_flags.build_vllm_server_options()


def test_every_failure_class_has_its_exit_code_and_one_line():
    from sync.commands.errors import INTERNAL, REFUSED, describe
    from sync.rules import RuleTableError

    cases = [
        (SyncError("x; fix"), REFUSED, "x; fix"),
        (RuleTableError("t.toml: bad"), REFUSED, "t.toml: bad"),
        (PermissionError(13, "Permission denied", "/ro/x"), REFUSED, "permission denied on /ro/x; give your user"),
        (OSError(28, "No space left on device", "/full/x"), REFUSED, "(/full/x); free some space"),
        (FileExistsError(17, "File exists", "/w/a"), REFUSED, "File exists (/w/a); check the path"),
        (FileNotFoundError(2, "No such file", "/no"), REFUSED, "not found: /no; check the path"),
        (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), REFUSED, "not UTF-8 text"),
        (KeyError("boom"), INTERNAL, "internal error: KeyError"),
    ]  # fmt: skip
    for exc, code, text in cases:
        got_code, line = describe(exc)
        assert got_code == code and text in line and "\n" not in line
