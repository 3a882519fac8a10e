"""Two upstream paths that translate to one downstream path (``slime/utils/sglang_x.py`` and
``slime/utils/vllm_x.py`` both become ``vime/utils/vllm_x.py`` under the real path rules): refused
before anything is written, naming both, by the window's checks, ``translate`` and ``rules check
--upstream``; a layout entry that maps one elsewhere lets the window through. Real rules, real git
repositories; the stand-in translator for file contents in the window."""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner
from window_helpers import commit, fake_translate, git, init_repo

from sync.cli import app
from sync.collisions import find_collisions
from sync.rules import DEFAULT_DIRECTORY, load_rules
from sync.window import SyncError, run_window

runner = CliRunner()
BOTH = r"slime/utils/sglang_x\.py and slime/utils/vllm_x\.py both translate to vime/utils/vllm_x\.py"


def _repos(tmp_path, layout: str | None = None):
    up = init_repo(tmp_path / "up")
    commit(up, "base (#1)", {"slime/utils/sglang_x.py": "A = 1\n", "slime/utils/vllm_x.py": "B = 1\n"})
    commit(up, "change (#2)", {"slime/utils/sglang_x.py": "A = 2\n"})
    down = init_repo(tmp_path / "down")
    files = {"vime/utils/vllm_x.py": "B = 1\n"}
    if layout is not None:  # the downstream keeps upstream's sglang_x.py under another name
        files["translations/layout.toml"] = layout
        files["vime/utils/sglang_compat_x.py"] = "A = 1\n"
    commit(down, "vime at #1", files)
    return up, down


def test_window_refuses_two_upstream_files_on_one_target_before_any_write(tmp_path):
    up, down = _repos(tmp_path)
    refs = git(down, "for-each-ref")
    with pytest.raises(SyncError, match=BOTH) as err:
        run_window(up, down, 2, 2, rules=load_rules(None), translate_fn=fake_translate)
    assert "layout.toml" in str(err.value) and "\n" not in str(err.value)
    assert git(down, "for-each-ref") == refs and not (tmp_path / "down-sync-2-2").exists()
    result = runner.invoke(
        app, ["window", "--upstream", str(up), "--downstream", str(down), "--from", "2", "--to", "2"]
    )
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.strip().splitlines()[-1].startswith("vime-sync window: slime/utils/sglang_x.py and")


def test_a_layout_entry_that_maps_one_elsewhere_lets_the_window_through(tmp_path):
    layout = 'kind = "layout"\n[paths]\n"slime/utils/sglang_x.py" = "vime/utils/sglang_compat_x.py"\n'
    up, down = _repos(tmp_path, layout)
    result = run_window(up, down, 2, 2, rules=load_rules(None), translate_fn=fake_translate)
    assert (result.worktree / "vime/utils/sglang_compat_x.py").read_text() == "A = 2\n"
    assert (result.worktree / "vime/utils/vllm_x.py").read_text() == "B = 1\n"


def test_a_file_where_another_needs_a_folder_is_a_collision_too():
    [c] = find_collisions({"slime/a/sglang": "vime/a/vllm", "slime/a/vllm/x.py": "vime/a/vllm/x.py"})
    assert c.folder and c.target == "vime/a/vllm"
    assert "slime/a/sglang translates to the file vime/a/vllm, where slime/a/vllm/x.py needs a folder" in (
        c.describe()
    )


def test_translate_never_writes_one_file_over_another(tmp_path):
    src = tmp_path / "src"
    (src / "slime/utils").mkdir(parents=True)
    (src / "slime/utils/sglang_x.py").write_text("A = 1\n")
    (src / "slime/utils/vllm_x.py").write_text("B = 1\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["translate", str(src), "--out", str(out), "--no-conformance"])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    [line] = [x for x in result.output.splitlines() if x.startswith("vime-sync translate:")]
    assert "slime/utils/sglang_x.py and slime/utils/vllm_x.py both translate to vime/utils/vllm_x.py" in line
    assert not out.exists() or not any(out.rglob("*"))


def test_rules_check_with_an_upstream_tree_names_the_collision(tmp_path):
    """The rule tables without vime's own layout map (which makes every slime file a port request)."""
    up, _down = _repos(tmp_path)
    tables = tmp_path / "tables"
    tables.mkdir()
    for table in DEFAULT_DIRECTORY.glob("*.toml"):
        if table.name != "layout.toml":
            shutil.copy(table, tables / table.name)
    check = ["rules", "check", "--no-vllm", "--rules", str(tables), "--upstream", str(up)]
    result = runner.invoke(app, check)
    assert result.exit_code == 1, result.output
    assert "slime/utils/sglang_x.py and slime/utils/vllm_x.py both translate to vime/utils/vllm_x.py" in (
        result.output
    )
    git(up, "rm", "-q", "slime/utils/vllm_x.py")
    git(up, "commit", "-q", "-m", "drop (#3)")
    clean = runner.invoke(app, check)
    assert clean.exit_code == 0, clean.output
