"""`vime-sync rules check` on the shipped tables and on tables broken on purpose (in tmp_path)."""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner

from sync.cli import app
from sync.rules import DEFAULT_DIRECTORY
from sync.translator.check import check_tables
from sync.translator.vllm_imports import vllm_installed

RULE = '[[rule]]\nid = "{id}"\nfrom = "{from_}"\nto = "{to}"\nstatus = "{status}"\nnote = "n"\n'


def _tables(tmp_path, extra: dict[str, str]):
    directory = tmp_path / "translations"
    shutil.copytree(DEFAULT_DIRECTORY, directory)
    for name, text in extra.items():
        (directory / name).write_text(text)
    return directory


def test_shipped_tables_pass_without_vllm_imports():
    assert check_tables(check_imports=False) == []


@pytest.mark.skipif(not vllm_installed(), reason="vLLM is not installed here")
def test_shipped_tables_pass_with_vllm_imports():
    assert check_tables() == []


def test_unknown_kind_duplicate_id_and_shadowing_are_each_one_line(tmp_path):
    directory = _tables(
        tmp_path,
        {
            "zz_unknown.toml": 'kind = "telepathy"\n',
            "zz_dup.toml": 'kind = "kwarg"\n'
            + RULE.format(id="kwarg.max_new_tokens", from_="a", to="b", status="full"),
            "zz_shadow.toml": 'kind = "kwarg"\n'
            + RULE.format(id="kwarg.again", from_="max_new_tokens", to="max_len", status="full"),
        },
    )
    problems = check_tables(directory, check_imports=False)
    assert any(p.startswith("zz_unknown.toml: unknown kind 'telepathy'") for p in problems)
    assert any("duplicate rule id 'kwarg.max_new_tokens'" in p for p in problems)
    assert any("'kwarg.again' is shadowed by 'kwarg.max_new_tokens'" in p for p in problems)
    assert all("\n" not in p for p in problems)


def test_bad_regex_and_vllm_srt_target_are_reported(tmp_path):
    directory = _tables(
        tmp_path,
        {
            "zz_ref.toml": 'kind = "reference"\n'
            + RULE.format(id="ref.bad", from_="([", to="", status="keep"),
            "zz_mod.toml": 'kind = "module"\n'
            + RULE.format(id="mod.naive", from_="sglang.srt.parser", to="vllm.srt.parser", status="full"),
        },
    )
    problems = check_tables(directory, check_imports=False)
    assert any("'ref.bad': regex does not compile" in p for p in problems)
    assert any("'mod.naive': target 'vllm.srt.parser' names vllm.srt" in p for p in problems)


@pytest.mark.skipif(not vllm_installed(), reason="vLLM is not installed here")
def test_full_module_rule_whose_target_does_not_import_fails_the_cli(tmp_path):
    directory = _tables(
        tmp_path,
        {
            "zz_mod.toml": 'kind = "module"\n'
            + RULE.format(
                id="mod.made_up", from_="sglang.srt.x", to="vllm.utils.no_such_module.f", status="full"
            )
            + RULE.format(
                id="mod.real", from_="sglang.srt.y", to="vllm.utils.network_utils.get_ip", status="full"
            ),
        },
    )
    result = CliRunner().invoke(app, ["rules", "check", "--rules", str(directory)])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "'mod.made_up' (full) targets 'vllm.utils.no_such_module.f'" in lines[0]


def test_cli_ok_and_list():
    runner = CliRunner()
    ok = runner.invoke(app, ["rules", "check", "--no-vllm"])
    assert ok.exit_code == 0 and "no problems" in ok.output
    listed = runner.invoke(app, ["rules", "list", "--kind", "path"])
    assert (
        listed.exit_code == 0 and "path.sglang_rollout" in listed.output and "mod.slime" not in listed.output
    )


def test_text_rule_shadowed_by_an_earlier_one_and_flag_name_disagreement(tmp_path):
    directory = _tables(
        tmp_path,
        {
            "zz_text.toml": 'kind = "text"\n'
            '[[rule]]\nid = "text.zz_any"\nfrom = "(?i)sglang"\nto = "vllm"\nstatus = "partial"\n'
            'contexts = ["markdown"]\nnote = "n"\n'
            '[[rule]]\nid = "text.zz_router"\nfrom = "SGLang router"\nto = "vllm-router"\nstatus = "partial"\n'
            'contexts = ["markdown"]\nexample = "SGLang router"\nnote = "n"\n',
            "zz_names.toml": 'kind = "name"\n'
            + RULE.format(id="name.zz_router_ip", from_="sglang_router_ip", to="router_ip", status="full")
            + 'match = "exact"\n',
        },
    )
    problems = check_tables(directory, check_imports=False)
    assert any("'text.zz_router' is shadowed by 'text.zz_any'" in p for p in problems)
    assert any("'name.zz_router_ip' renames 'sglang_router_ip' to 'router_ip'" in p for p in problems)


def test_two_source_flags_mapped_to_one_target_flag_are_refused(tmp_path):
    """slime's parser defines --sglang-pp-size and --sglang-pipeline-parallel-size; mapping both to
    --vllm-pipeline-parallel-size makes the translated parser define it twice and crash."""
    table = (
        'kind = "string"\n'
        '[[rule]]\nid = "zz.a"\nfrom = "--sglang-zz-size"\nto = "--vllm-zz-size"\nstatus = "full"\n'
        'role = "flag"\nnote = "n"\n'
        '[[rule]]\nid = "zz.b"\nfrom = "--sglang-zz-long-size"\nto = "--vllm-zz-size"\nstatus = "full"\n'
        'role = "flag"\nnote = "n"\n'
    )
    directory = _tables(tmp_path, {"zz_flags.toml": table})
    problems = check_tables(directory, check_imports=False)
    assert len(problems) == 1 and "'zz.b'" in problems[0] and "twice" in problems[0]
    result = CliRunner().invoke(app, ["rules", "check", "--rules", str(directory), "--no-vllm"])
    assert result.exit_code == 1
