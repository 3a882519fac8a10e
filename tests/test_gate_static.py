"""The gate's static checks, on text and on files in a temporary directory (no subprocess)."""

from __future__ import annotations

import ast

import pytest

from sync.gate.static_checks import (
    check_compiles,
    check_conflict_markers,
    check_sglang_imports,
    conflict_marker_lines,
    sglang_imports,
)
from sync.rules import load_rules
from sync.translator.vllm_flags import (
    build_vllm_server_options,
    check_vllm_flags,
    own_vllm_flags,
    script_flags,
    vllm_server_options,
)


def test_conflict_markers_found_with_base_section_and_separator():
    text = "a\n<<<<<<< ours\nb\n||||||| base\nx\n=======\nc\n>>>>>>> theirs\nd\n"
    assert conflict_marker_lines(text) == [2, 4, 6, 8]


def test_markdown_rule_lines_are_not_conflict_markers():
    assert conflict_marker_lines("Title\n=======\n\ntext <<<<<<< inline\n") == []


def test_compile_failures_name_the_line_and_the_prs(tmp_path):
    (tmp_path / "ok.py").write_text("x = 1\n")
    (tmp_path / "py2.py").write_text('def dump(x):\n    print "state:", x\n')
    (tmp_path / "bad_scope.py").write_text("return 1\n")  # parses, but does not compile
    failures, trees = check_compiles(tmp_path, ["ok.py", "py2.py", "bad_scope.py"], {"py2.py": [121]})
    assert sorted(trees) == ["ok.py"]
    by_file = {f.files[0]: f for f in failures}
    assert by_file["py2.py"].line == 2 and by_file["py2.py"].prs == [121]
    assert "does not compile" in by_file["bad_scope.py"].message and by_file["bad_scope.py"].prs == []


def test_sglang_imports_found_in_every_import_form():
    tree = ast.parse(
        "import os, sglang\nimport sglang.srt.utils as u\nfrom sglang_router import x\n"
        "from .sglang import y\nimport strands_sglang\n"
    )
    assert sglang_imports(tree) == [("sglang", 1), ("sglang.srt.utils", 2), ("sglang_router", 3)]


def test_keep_rule_covers_an_import_and_nothing_else():
    rules = load_rules()
    keep = next(
        r for r in rules.rules if r.status == "keep" and r.kind == "module" and r.from_.startswith("sglang")
    )
    trees = {"ex/tool.py": ast.parse(f"import {keep.from_}\nimport sglang.srt.server_args\n")}
    failures = check_sglang_imports(trees, rules, {"ex/tool.py": [7]})
    assert [f.line for f in failures] == [2]
    assert "sglang.srt.server_args" in failures[0].message and failures[0].prs == [7]


def test_script_flags_skip_comments():
    text = "# --vllm-commented 1\npython train.py --vllm-max-num-seqs 8 \\\n  --vllm-x=1  # --vllm-y\n"
    assert script_flags(text) == [("--vllm-max-num-seqs", 2), ("--vllm-x", 3)]


def test_own_vllm_flags_come_from_argument_definitions_only():
    tree = ast.parse(
        'parser.add_argument("--vllm-router-port", type=int, default=None)\n'
        '_add(group, "--vllm-base-port", type=int)\n'
        'subprocess.run(["--vllm-not-a-definition"])\n'
    )
    assert own_vllm_flags({"a.py": tree}) == {"--vllm-router-port", "--vllm-base-port"}


@pytest.fixture(scope="module")
def server_options():
    pytest.importorskip("vllm")
    return build_vllm_server_options()  # from vLLM's own parser, no cache


def test_cached_options_equal_a_fresh_build(server_options, tmp_path, monkeypatch):
    """The on-disk cache (keyed by vLLM version) answers exactly what vLLM's parser says."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    vllm_server_options.cache_clear()
    first = vllm_server_options()  # builds and writes the cache
    assert list((tmp_path / "vime-sync").glob("vllm-serve-options-*.json"))
    vllm_server_options.cache_clear()
    assert vllm_server_options() == first == server_options  # read back from disk
    vllm_server_options.cache_clear()


def test_vllm_flags_checked_against_vllms_own_parser(tmp_path, server_options):
    """Real vLLM parser: a real flag passes, a made-up one fails, vime's own flag passes."""
    assert "--max-num-seqs" in server_options and "--gpu-memory-utilization" in server_options
    (tmp_path / "run.sh").write_text(
        "python train.py --vllm-max-num-seqs 8 --vllm-gpu-memory-utilization 0.3 \\\n"
        "  --vllm-mem-fraction-static 0.6 --vllm-router-port 3000\n"
    )
    failures = check_vllm_flags(
        tmp_path, ["run.sh"], {"--vllm-router-port"}, {"run.sh": [120]}, server_options, load_rules()
    )
    assert [(f.line, f.prs) for f in failures] == [(2, [120])]
    assert "--vllm-mem-fraction-static" in failures[0].message


def test_conflict_marker_check_skips_binary_files(tmp_path):
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\0\n<<<<<<< x\n")
    (tmp_path / "a.py").write_text("<<<<<<< ours\n=======\n>>>>>>> theirs\n")
    failures = check_conflict_markers(tmp_path, ["logo.png", "a.py"], {"a.py": [3, 1]})
    assert [f.files for f in failures] == [["a.py"]] and failures[0].prs == [1, 3]


def test_vllm_flag_check_is_skipped_with_a_note_when_vllm_is_missing(tmp_path, monkeypatch):
    """Without vLLM the flag check cannot build vLLM's parser: it is reported as skipped, not passed."""
    import sync.gate.static as gate
    from sync.gate.config import GateConfig
    from sync.model.gate import GateResult
    from sync.translator.vllm_flags import VllmNotInstalled

    def missing():
        raise VllmNotInstalled("No module named 'vllm'")

    monkeypatch.setattr(gate, "vllm_server_options", missing)
    (tmp_path / "run.sh").write_text("python train.py --vllm-anything 1\n")
    result = GateResult()
    gate.run_static_checks(tmp_path, {}, GateConfig(), result, rules=load_rules())
    check = next(c for c in result.checks if c.name == "vllm-flag")
    assert check.status == "skipped" and "vLLM not installed" in check.note and result.passed
