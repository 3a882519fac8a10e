"""The window with the REAL translator and rules (translations/*.toml), on the embedded demo repositories
and on a small SGLang-flavoured upstream built here: translated content is checked against
translate_file itself, so the merge adds nothing and loses nothing."""

from __future__ import annotations

import json
import subprocess

import pytest
from window_helpers import commit, git, init_repo

from sync.demo.build import build_demo
from sync.merge.textmerge import parse_hunks
from sync.rules import load_rules
from sync.translate import translate_file
from sync.window import run_window
from sync.window.resolve import resolve_branch


def _blob(repo, rev, path) -> bytes:
    return subprocess.run(
        ["git", "-C", str(repo), "show", f"{rev}:{path}"], capture_output=True, check=True
    ).stdout


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    repos = build_demo(tmp_path_factory.mktemp("demo"))
    result = run_window(repos.upstream, repos.downstream, to_pr=repos.to_pr, from_pr=repos.from_pr)
    return repos, result


def test_demo_files_match_the_translator_exactly(demo):
    repos, result = demo
    rules = load_rules()
    seen = set()
    for out in result.outcomes:
        if out.outcome in ("theirs", "new"):
            expected = translate_file(
                out.upstream_path, _blob(repos.upstream, result.window.tip, out.upstream_path), rules
            )
            assert (result.worktree / out.path).read_bytes() == expected.data, out.path
            assert expected.dst_path == out.path
            seen.add(out.outcome)
        if out.outcome in ("conflict", "add_add"):
            data = (result.worktree / out.path).read_bytes()
            assert len(parse_hunks(data, out.marker_size)) == out.conflicts > 0
    assert seen == {"theirs", "new"}
    outcomes = {o.outcome for o in result.outcomes}
    assert {"conflict", "structural", "deleted", "not_mirrored", "modify_delete", "add_add"} <= outcomes
    assert any(o.renamed_from for o in result.outcomes)


def test_demo_leaves_files_the_window_does_not_touch(demo):
    repos, result = demo
    touched = {o.path for o in result.outcomes} | {p for o in result.outcomes for p in o.remove}
    head = git(repos.downstream, "rev-parse", "HEAD")
    for path in git(repos.downstream, "ls-tree", "-r", "--name-only", head).splitlines():
        if path not in touched:
            assert (result.worktree / path).read_bytes() == _blob(repos.downstream, head, path), path


def test_demo_parse_failure_and_resolve(demo):
    _, result = demo
    assert any(q.kind == "parse_error" for q in result.questions)
    doc = json.loads((result.report_dir / "decisions.json").read_text())
    for q in doc["questions"]:
        if q["tier"] == "Decide":
            q["decision"] = "theirs"
    (result.report_dir / "decisions.json").write_text(json.dumps(doc))
    resolve_branch(result.worktree)
    for out in result.outcomes:
        if out.outcome in ("conflict", "add_add"):
            assert not parse_hunks((result.worktree / out.path).read_bytes(), out.marker_size)


SGLANG_ENGINE = """from sglang.srt.utils import kill_process_tree


def launch(args):
    return args.sglang_mem_fraction_static


def stop(proc):
    kill_process_tree(proc.pid)
"""


@pytest.mark.slow
def test_small_sglang_upstream_twice_is_identical(tmp_path):
    up = init_repo(tmp_path / "slime")
    engine = "slime/backends/sglang_utils/sglang_engine.py"
    cutoff = commit(up, "engine (#1)", {engine: SGLANG_ENGINE, "README.md": "slime runs on SGLang.\n"})
    commit(up, "launch flag (#2)", {engine: SGLANG_ENGINE.replace("return args", "return 0.9 * args")})
    commit(up, "readme (#3)", {"README.md": "slime runs on SGLang, fast.\n"})
    rules = load_rules()
    down = init_repo(tmp_path / "vime")
    files = {}
    for rel in ("README.md", engine):
        t = translate_file(rel, _blob(up, cutoff, rel), rules)
        files[t.dst_path] = t.data
    commit(down, "vime at #1", files)
    dst = rules.map_path(engine)
    ours = files[dst].decode().replace("def stop(proc):", "def stop(proc):  # vime: also reaps children")
    commit(down, "vime edit", {dst: ours})

    first = run_window(up, down, to_pr=3, from_pr=2)
    merged = (first.worktree / dst).read_text()
    assert "sglang" not in merged.replace("sglang_utils", "")  # translated
    assert "0.9 * args" in merged and "# vime: also reaps children" in merged
    tip_readme = translate_file("README.md", _blob(up, first.window.tip, "README.md"), rules).data
    assert (first.worktree / "README.md").read_bytes() == tip_readme
    tree = git(first.worktree, "rev-parse", "HEAD^{tree}")
    git(down, "worktree", "remove", "--force", str(first.worktree))
    git(down, "branch", "-D", first.branch)
    second = run_window(up, down, to_pr=3, from_pr=2)
    assert second.cache_misses == 0 and git(second.worktree, "rev-parse", "HEAD^{tree}") == tree


def test_cli_window_prints_stages_and_summary(tmp_path):
    from typer.testing import CliRunner

    from sync.cli import app

    repos = build_demo(tmp_path / "demo")
    args = ["window", "--upstream", str(repos.upstream), "--downstream", str(repos.downstream)]
    out = CliRunner().invoke(app, [*args, "--from", str(repos.from_pr), "--to", str(repos.to_pr)])
    assert out.exit_code == 0, out.output
    for line in (
        "✓ window: #111..#122",
        "✓ changed files",
        "✓ questions and reports",
        "✓ branch and commit 1",
    ):
        assert line in out.output
    assert "files with conflict markers" in out.output and "questions: Decide" in out.output
    assert "reports/slime-111-122" in out.output.replace("\n", "")
    assert git(repos.downstream, "rev-parse", "--abbrev-ref", "HEAD") == "main"  # checkout untouched
    assert (
        git(repos.downstream, "branch", "--list", "sync/slime-111-122").lstrip("+* ") == "sync/slime-111-122"
    )
