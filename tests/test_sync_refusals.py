"""Inputs an adversary brings to vime-sync, one case per test (each failed before its fix): nothing is read
from outside a source tree, no output is half-written, every command (``ledger`` included) answers in
one line naming the file and the fix, file names that are not UTF-8 do not make a window impossible,
the dirty-checkout check sees layout-mapped paths, a window below the last cutoff needs ``--rewind``,
status and resolve never report another run's gate, and rollback messages name only what happened.
Real git repositories and the real CLI; the stand-in translator where only the merge machinery counts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner
from window_helpers import FakeRules, build_scenario, commit, fake_translate, git, init_repo

from sync.cli import app
from sync.window import SyncError, run_window
from sync.window.resolve import AlreadyResolved, resolve_branch
from sync.window.status import sync_status

runner = CliRunner()


def _one_line(result, command: str, code: int = 1) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    mine = [line for line in lines if line.startswith(f"vime-sync {command}: ")]
    assert len(mine) == 1 and lines[-1] == mine[0], result.output
    return mine[0]


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


# --- nothing read from outside the source; nothing half-written -------------------------------------


def test_translate_of_a_directory_never_reads_through_a_symlink_out_of_it(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:the machine's own file\n")
    src = tmp_path / "src"
    (src / "slime").mkdir(parents=True)
    (src / "slime/a.py").write_text("A = 1\n")
    (src / "slime/passwd.md").symlink_to(secret)
    (src / "slime/inner.py").symlink_to(src / "slime/a.py")  # inside the tree: skipped too, as with --rev
    out = tmp_path / "out"
    result = runner.invoke(app, ["translate", str(src), "--out", str(out), "--no-conformance"])
    assert result.exit_code == 0, result.output
    written = {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*") if p.is_file()}
    assert "the machine's own file" not in "".join(written.values())
    assert "vime/a.py" in written and "vime/passwd.md" not in written and "vime/inner.py" not in written
    assert "slime/passwd.md" in result.output and "leaves" in result.output


def test_translate_whose_report_cannot_be_written_leaves_no_out(tmp_path):
    src = tmp_path / "src"
    (src / "slime").mkdir(parents=True)
    (src / "slime/a.py").write_text("import sglang\n")
    out = tmp_path / "out"
    bad = runner.invoke(
        app,
        [
            "translate",
            str(src),
            "--out",
            str(out),
            "--no-conformance",
            "--report",
            str(tmp_path / "no/r.json"),
        ],
    )
    line = _one_line(bad, "translate")
    assert "no/r.json" in line
    assert not out.exists()
    again = runner.invoke(
        app,
        ["translate", str(src), "--out", str(out), "--no-conformance", "--report", str(tmp_path / "r.json")],
    )
    assert again.exit_code == 0, again.output  # no --force needed: nothing was half-written
    assert (out / "vime/a.py").is_file() and json.loads((tmp_path / "r.json").read_text())["totals"]
    assert not [p for p in tmp_path.iterdir() if ".partial" in p.name or p.name.endswith(".tmp")]


def test_translate_names_a_source_file_it_cannot_read(tmp_path, monkeypatch):
    src = tmp_path / "src"
    (src / "slime").mkdir(parents=True)
    (src / "slime/a.py").write_text("A = 1\n")
    locked = src / "slime/locked.py"
    locked.write_text("B = 1\n")
    locked.chmod(0)
    if os.geteuid() == 0:  # root reads a mode-000 file: make the read fail as it does for a user
        real = Path.read_bytes

        def read_bytes(self):
            if self == locked:
                raise PermissionError(13, "Permission denied", str(self))
            return real(self)

        monkeypatch.setattr(Path, "read_bytes", read_bytes)
    result = runner.invoke(app, ["translate", str(src), "--out", str(tmp_path / "out"), "--no-conformance"])
    line = _one_line(result, "translate")
    assert "slime/locked.py" in line and "cannot be read" in line and "writable" not in line


# --- every command under the one-line handler; files named with the fix -----------------------------


def test_ledger_failures_are_one_line(sc, tmp_path):
    result = _window(sc)
    bad_upstream = runner.invoke(
        app,
        ["ledger", "--downstream", str(result.worktree), "--pr", "99", "--upstream", str(tmp_path / "nope")],
    )
    assert "nope" in _one_line(bad_upstream, "ledger")
    ledger = result.worktree / ".vime-sync/ledger"
    ledger.write_bytes(ledger.read_bytes() + b"\xff\xfe broken\n")
    undecodable = runner.invoke(app, ["ledger", "--downstream", str(result.worktree)])
    line = _one_line(undecodable, "ledger")
    assert ".vime-sync/ledger" in line and "UTF-8" in line


def test_undecodable_recorded_decisions_are_named(sc):
    result = _window(sc)
    _answer_all(result)
    (result.worktree / ".vime-sync").mkdir(exist_ok=True)
    (result.worktree / ".vime-sync/decisions.json").write_bytes(b'{"schema": "\xff"}')
    git(result.worktree, "add", ".vime-sync/decisions.json")
    git(result.worktree, "commit", "-q", "-m", "a broken record")
    cli = runner.invoke(app, ["resolve", "--worktree", str(result.worktree), "--no-gate"])
    line = _one_line(cli, "resolve")
    assert ".vime-sync/decisions.json" in line and "UTF-8" in line


def test_a_file_name_that_is_not_utf8_does_not_make_the_window_impossible(tmp_path):
    up = init_repo(tmp_path / "up")
    commit(up, "base (#1)", {"slime/a.py": "A = 1\n"})
    name = b"slime/caf\xe9.py".decode("utf-8", "surrogateescape")
    commit(up, "a latin-1 file name (#2)", {name: "B = 1\n"})
    down = init_repo(tmp_path / "down")
    commit(down, "vime at #1", {"vime/a.py": "A = 1\n"})
    result = run_window(up, down, 2, 2, rules=FakeRules(), translate_fn=fake_translate)
    summary = (result.report_dir / "SUMMARY.md").read_text(encoding="utf-8")
    assert "caf\\xe9.py" in summary
    json.loads((result.report_dir / "decisions.json").read_text(encoding="utf-8"))
    assert (result.worktree / b"vime/caf\xe9.py".decode("utf-8", "surrogateescape")).read_text() == "B = 1\n"
    resolve_branch(result.worktree)


def test_internal_encode_errors_are_not_shown_as_a_refusal():
    from sync.commands.errors import INTERNAL, describe

    code, line = describe(UnicodeEncodeError("utf-8", "\udce9", 0, 1, "surrogates not allowed"))
    assert code == INTERNAL and "internal error" in line


# --- the dirty-checkout check sees the paths the layout map gives -----------------------------------


def test_an_uncommitted_edit_at_a_layout_mapped_path_is_refused(tmp_path):
    up = init_repo(tmp_path / "up")
    commit(up, "base (#1)", {"slime/x.py": "X = 1\n"})
    commit(up, "change (#2)", {"slime/x.py": "X = 2\n"})
    down = init_repo(tmp_path / "down")
    layout = 'kind = "layout"\n[paths]\n"slime/x.py" = "vime/elsewhere/x.py"\n'
    commit(down, "vime at #1", {"vime/elsewhere/x.py": "X = 1\n", "translations/layout.toml": layout})
    (down / "vime/elsewhere/x.py").write_text("X = 'uncommitted'\n")
    with pytest.raises(
        SyncError, match=r"uncommitted changes in files this window merges: vime/elsewhere/x\.py"
    ):
        run_window(up, down, 2, 2, rules=FakeRules(), translate_fn=fake_translate)


# --- a window below the last cutoff; gate results of another run ------------------------------------


def _merge_and_drop(sc, result):
    git(sc.downstream, "merge", "-q", "--no-edit", result.branch)
    git(sc.downstream, "worktree", "remove", "--force", str(result.worktree))
    git(sc.downstream, "branch", "-D", result.branch)


def test_a_window_below_the_cutoff_is_refused_unless_rewind(sc):
    first = _window(sc, to_pr=12)
    _answer_all(first)
    resolve_branch(first.worktree)
    _merge_and_drop(sc, first)
    refs = git(sc.downstream, "for-each-ref")
    with pytest.raises(SyncError, match=r"synced already.*--rewind"):
        _window(sc, to_pr=14, from_pr=11)
    assert git(sc.downstream, "for-each-ref") == refs
    cli = runner.invoke(
        app,
        [
            "window",
            "--upstream",
            str(sc.upstream),
            "--downstream",
            str(sc.downstream),
            "--from",
            "11",
            "--to",
            "14",
        ],
    )
    assert "--rewind" in _one_line(cli, "window")
    again = _window(sc, to_pr=14, from_pr=11, rewind=True)
    assert again.window.from_pr == 11
    assert _window(sc, to_pr=14, from_pr=None, worktree=sc.downstream.parent / "next").window.from_pr == 13


def test_status_and_resolve_never_report_the_gate_of_another_run(sc):
    first = _window(sc)
    _answer_all(first)

    def passing(worktree, report_dir):
        (report_dir / "gate.json").write_text('{"passed": true}\n')
        return True

    resolve_branch(first.worktree, gate=passing)
    _merge_and_drop(sc, first)
    second = _window(sc, rewind=True)
    assert not (second.report_dir / "gate.json").exists()
    assert sync_status(second.worktree).gate is None
    resolve_branch(second.worktree)  # resolved without the gate
    calls = []

    def failing(worktree, report_dir):
        calls.append(worktree)
        (report_dir / "gate.json").write_text('{"passed": false}\n')
        return False

    done = resolve_branch(second.worktree, gate=failing)
    assert calls and done.gate_only and done.gate_passed is False
    assert sync_status(second.worktree).gate == {"passed": False}
    with pytest.raises(AlreadyResolved):
        resolve_branch(second.worktree, gate=failing)


# --- rollback messages name only what happened -----------------------------------------------------


def test_a_commit_that_was_never_made_is_not_reported_as_left_behind(sc):
    result = _window(sc)
    _answer_all(result)
    decisions_before = (result.report_dir / "decisions.json").read_bytes()
    git_dir = Path(git(result.worktree, "rev-parse", "--absolute-git-dir"))
    (git_dir / "index.lock").write_text("")  # another git process holds the index: commit 2 cannot be made
    cli = runner.invoke(app, ["resolve", "--worktree", str(result.worktree), "--no-gate"])
    line = _one_line(cli, "resolve")
    assert "index.lock" in line
    assert "reset the branch" not in line and "by hand" not in line and "decisions.json" not in line
    assert (result.report_dir / "decisions.json").read_bytes() == decisions_before
    (git_dir / "index.lock").unlink()
    resolve_branch(result.worktree)


def test_a_downstream_file_where_a_folder_is_needed_is_refused_before_any_write(tmp_path):
    up = init_repo(tmp_path / "up")
    commit(up, "base (#1)", {"slime/a.py": "A = 1\n"})
    commit(up, "add a package (#2)", {"slime/tools/run.py": "R = 1\n"})
    down = init_repo(tmp_path / "down")
    commit(down, "vime at #1", {"vime/a.py": "A = 1\n", "vime/tools": "a file named tools\n"})
    refs = git(down, "for-each-ref")
    cli = runner.invoke(
        app, ["window", "--upstream", str(up), "--downstream", str(down), "--from", "2", "--to", "2"]
    )
    line = _one_line(cli, "window")
    assert "slime/tools/run.py" in line and "vime/tools" in line
    assert "free space" not in line and "File exists" not in line
    assert git(down, "for-each-ref") == refs


# --- a rollback removes the folders it made --------------------------------------------------------


def _fail_at(stage: str):
    from sync.window.transaction import BOUNDARY_HOOKS

    def hook(name: str) -> None:
        if name == stage:
            BOUNDARY_HOOKS.clear()
            raise RuntimeError(f"injected before {stage}")

    BOUNDARY_HOOKS.append(hook)


def test_a_window_rollback_leaves_no_cache_folder_it_made(sc):
    git_dir = sc.downstream / ".git"
    assert not (git_dir / "vime-sync-cache").exists()
    _fail_at("worktree")
    with pytest.raises(RuntimeError, match="injected"):
        _window(sc, use_cache=True)
    assert not (git_dir / "vime-sync-cache").exists()
    assert not (git_dir / "vime-sync").exists()


def test_a_resolve_rollback_removes_the_folders_its_writes_made(tmp_path):
    """Upstream changes a file in a package the downstream deleted; resolve restores it (theirs) into a
    folder that no longer exists, then fails: the folder goes with the file."""
    up = init_repo(tmp_path / "up")
    commit(up, "base (#1)", {"slime/a.py": "A = 1\n", "slime/pkg/x.py": "X = 1\n"})
    commit(up, "change (#2)", {"slime/pkg/x.py": "X = 2\n"})
    down = init_repo(tmp_path / "down")
    commit(down, "vime at #1", {"vime/a.py": "A = 1\n", "vime/pkg/x.py": "X = 1\n"})
    commit(down, "drop the package", {"vime/pkg/x.py": None})
    result = run_window(up, down, 2, 2, rules=FakeRules(), translate_fn=fake_translate)
    path = result.report_dir / "decisions.json"
    doc = json.loads(path.read_text())
    [q] = [q for q in doc["questions"] if q["kind"] == "modify_delete"]
    q["decision"] = "theirs"
    path.write_text(json.dumps(doc))
    _fail_at("commit")
    with pytest.raises(RuntimeError, match="injected"):
        resolve_branch(result.worktree)
    assert not (result.worktree / "vime/pkg").exists()
    assert git(result.worktree, "status", "--porcelain", "--", "vime") == ""
    resolve_branch(result.worktree)
    assert (result.worktree / "vime/pkg/x.py").read_text() == "X = 2\n"


def test_a_window_rollback_removes_the_folders_above_its_worktree(sc, tmp_path):
    _fail_at("commit")
    with pytest.raises(RuntimeError, match="injected"):
        _window(sc, worktree=tmp_path / "new" / "deeper" / "wt")
    assert not (tmp_path / "new").exists()


def test_every_command_runs_under_the_one_line_handler():
    from sync.cli import app

    def callbacks(typer_app):
        for command in typer_app.registered_commands:
            yield command.name, command.callback
        for group in typer_app.registered_groups:
            yield from callbacks(group.typer_instance)

    found = dict(callbacks(app))
    assert {"window", "resolve", "status", "gate", "ledger", "translate", "check", "list"} <= set(found)
    unguarded = [name for name, fn in found.items() if not getattr(fn, "one_line_handler", None)]
    assert not unguarded, f"commands outside sync.commands.errors.guarded: {unguarded}"
