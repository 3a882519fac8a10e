"""Whole trees: provenance, hipify-style statistics, determinism, and the CLI on a real git repository."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from translate_helpers import fixture, rules, translate
from typer.testing import CliRunner

from sync.cli import app
from sync.translate import translate_tree


def _tree() -> list[tuple[str, bytes]]:
    return [
        ("slime/backends/sglang_utils/sglang_engine.py", fixture("engine_upstream.py.txt")),
        ("slime/rollout/sglang_rollout.py", fixture("rollout_upstream.py.txt")),
        ("slime/utils/plain.py", fixture("negative_upstream.py.txt")),
        ("scripts/run.sh", fixture("launch_upstream.sh")),
        ("README.md", fixture("README_upstream.md")),
        ("docker/patch/latest/sglang.patch", b"--- a/x\n+++ b/x\n"),
        ("imgs/logo.png", b"\x89PNG\x00\x01"),
        ("slime/utils/broken.py", fixture("broken_upstream.py.txt")),
    ]


def test_provenance_names_the_rule_and_the_line_it_changed():
    result = translate("slime/rollout/sglang_rollout.py", fixture("rollout_upstream.py.txt"))
    before = fixture("rollout_upstream.py.txt").decode().split("\n")
    after = result.data.decode().split("\n")
    changed = {number for number, (a, b) in enumerate(zip(before, after, strict=True), start=1) if a != b}
    provenance = {applied.line for applied in result.applied if applied.line}
    assert provenance == changed
    by_rule = {(a.rule_id, a.line) for a in result.applied}
    assert ("ep.generate", 7) in by_rule and ("kwarg.max_new_tokens", 8) in by_rule
    assert ("shape.finish_reason_type", 14) in by_rule
    assert ("path.sglang_rollout", 0) in by_rule  # path rules carry line 0


def test_tree_statistics_count_what_was_converted_and_left():
    result = translate_tree(_tree(), rules(), workers=1)
    stats = result.stats
    assert [f.src_path for f in result.files] == sorted(path for path, _ in _tree())
    assert stats.files_total == 8
    assert stats.files_binary == 1 and stats.files_not_mirrored == 1 and stats.files_parse_error == 1
    assert stats.files_translated == 4  # engine, rollout, script, README
    # plain.py: contents as upstream, only its path moves slime/ -> vime/; broken.py: no parse, no rewrite
    assert stats.files_unchanged == 2
    content_applied = sum(1 for f in result.files for a in f.applied if a.line > 0)
    path_applied = sum(1 for f in result.files for a in f.applied if a.line == 0)
    assert path_applied >= 5 and stats.references_converted == content_applied
    assert sum(stats.rules_applied.values()) == content_applied + path_applied
    assert stats.references_unsupported == sum(len(f.unsupported) for f in result.files) > 0
    assert stats.references_unmapped == 1  # the broken file's import
    expected = 100 * stats.references_converted / stats.references_total
    assert abs(stats.converted_percent - expected) < 1e-9 and 0 < expected < 100
    assert stats.rules_applied["ep.generate"] >= 2  # rollout + README


def test_parallel_and_serial_translation_agree():
    many = [(f"slime/pkg{i}/mod.py", fixture("engine_upstream.py.txt")) for i in range(20)] + _tree()
    serial = translate_tree(many, rules(), workers=1)
    parallel = translate_tree(many, rules(), workers=2)
    assert [(f.src_path, f.dst_path, f.data, f.applied) for f in serial.files] == [
        (f.src_path, f.dst_path, f.data, f.applied) for f in parallel.files
    ]
    assert serial.stats == parallel.stats


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def _upstream_repo(tmp_path: Path) -> tuple[Path, str, str]:
    repo = tmp_path / "upstream"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / "slime/rollout").mkdir(parents=True)
    (repo / "slime/rollout/sglang_rollout.py").write_bytes(fixture("rollout_upstream.py.txt"))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "rollout (#1)")
    first = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "slime/x.py").write_text("from sglang.srt.brand_new import thing\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "new import (#2)")
    return repo, first, _git(repo, "rev-parse", "HEAD").strip()


def test_cli_translates_a_git_revision_and_strict_fails_on_unmapped(tmp_path):
    repo, first, second = _upstream_repo(tmp_path)
    runner = CliRunner()
    ok = runner.invoke(
        app, ["translate", str(repo), "--rev", first, "--out", str(tmp_path / "a"), "--strict"]
    )
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "a/vime/rollout/vllm_rollout.py").is_file()
    assert not (tmp_path / "a/vime/x.py").exists()  # that file is only in the later revision
    assert (
        ok.output.rstrip()
        .splitlines()[-1]
        .endswith(
            ": transformed 1, unchanged 0 (no rule applies: copied as is), skipped 0, failed 0, "
            "warnings 0 (0 unmapped references)"
        )
    )  # the codemod's closing line, each count saying what became of those files
    strict = runner.invoke(
        app, ["translate", str(repo), "--rev", second, "--out", str(tmp_path / "b"), "--strict"]
    )
    assert strict.exit_code == 1
    assert "unmapped slime/x.py:1:" in strict.output
    loose = runner.invoke(
        app, ["translate", str(repo), "--rev", second, "--out", str(tmp_path / "c"), "--stats"]
    )
    assert loose.exit_code == 0 and "rule ep.generate" in loose.output


def test_cli_translates_a_directory_and_rejects_bad_input(tmp_path):
    src = tmp_path / "src"
    (src / "slime").mkdir(parents=True)
    (src / "slime/a.py").write_text("URL = '/flush_cache'\n")
    runner = CliRunner()
    result = runner.invoke(app, ["translate", str(src), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out/vime/a.py").read_text() == "URL = '/reset_prefix_cache'\n"
    missing = runner.invoke(app, ["translate", str(tmp_path / "nope"), "--out", str(tmp_path / "o2")])
    assert missing.exit_code != 0 and "does not exist" in missing.output
    badrev = runner.invoke(app, ["translate", str(src), "--rev", "deadbeef", "--out", str(tmp_path / "o3")])
    assert badrev.exit_code != 0 and "cannot read revision" in badrev.output
    again = runner.invoke(app, ["translate", str(src), "--out", str(tmp_path / "out")])
    assert again.exit_code == 1 and "is not an empty directory" in again.output
    assert (tmp_path / "out/vime/a.py").read_text() == "URL = '/reset_prefix_cache'\n"  # nothing touched
    forced = runner.invoke(app, ["translate", str(src), "--out", str(tmp_path / "out"), "--force"])
    assert forced.exit_code == 0, forced.output


def test_cli_counts_a_file_that_does_not_parse_as_failed_with_its_reason(tmp_path):
    src = tmp_path / "src"
    (src / "slime/utils").mkdir(parents=True)
    (src / "slime/utils/broken.py").write_bytes(fixture("broken_upstream.py.txt"))
    (src / "slime/a.py").write_text("URL = '/flush_cache'\n")
    (src / "slime/b.py").write_text("x = 1\n")
    report = tmp_path / "report.json"
    result = CliRunner().invoke(
        app,
        ["translate", str(src), "--out", str(tmp_path / "out"), "--report", str(report), "--no-conformance"],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.rstrip().splitlines()
    failed = [line for line in lines if line.startswith("failed ")]
    assert len(failed) == 1, lines
    assert re.fullmatch(
        r"failed slime/utils/broken\.py: does not parse \(ParserSyntaxError: .*@ 4:1.*\); copied without a rewrite",
        failed[0],
    ), failed  # one line: the file, libcst's error and where, what was written instead
    assert lines[-1].endswith(
        ": transformed 1, unchanged 1 (no rule applies: copied as is), skipped 0, failed 1 (listed above "
        "with the reason), warnings 1 (1 unmapped references)"
    )  # the broken file's sglang import stays unmapped; it is failed, not also unchanged
    assert (tmp_path / "out/vime/utils/broken.py").read_bytes() == fixture("broken_upstream.py.txt")
    saved = json.loads(report.read_text())
    assert saved["totals"]["files_failed"] == 1
    assert saved["failed"] == [{"path": "slime/utils/broken.py", "reason": failed[0].split(": ", 1)[1]}]


def test_run_fates_give_each_file_one_fate_and_count_the_failures():
    from sync.model.fate import BINARY, NOT_MIRRORED, Fate, FileFate, RunFates

    fates = RunFates(
        (
            FileFate("a.py", Fate.TRANSFORMED),
            FileFate("b.png", Fate.SKIPPED, BINARY),
            FileFate("c.py", Fate.FAILED, "does not parse (x)"),
            FileFate("d", Fate.SKIPPED, NOT_MIRRORED),
            FileFate("e", Fate.SKIPPED, NOT_MIRRORED),
            FileFate("f.py", Fate.FAILED, "does not parse (y)"),
        ),
        unmapped_references=3,
    )
    assert [f.path for f in fates.of(Fate.FAILED)] == ["c.py", "f.py"]
    assert fates.closing_line() == (
        "transformed 1, unchanged 0 (no rule applies: copied as is), skipped 3 (2 not mirrored: not "
        "written; 1 binary: copied as is), failed 2 (listed above with the reason), warnings 3 (3 unmapped "
        "references)"
    )
