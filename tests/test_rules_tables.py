"""The rule tables as shipped: loading, lookups, hash, and the vLLM targets they name."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from translate_helpers import rules

from sync.rules import DEFAULT_DIRECTORY, KINDS, STATUSES, RuleTableError, load_rules


def test_every_kind_has_a_table_and_every_rule_the_common_fields():
    loaded = rules()
    assert {rule.kind for rule in loaded.rules} == set(KINDS)
    for rule in loaded.rules:
        assert rule.id and rule.note and rule.status in STATUSES
        if rule.status in ("full", "partial") and rule.kind not in ("not_mirrored", "reference"):
            assert rule.to, rule.id
    assert loaded.rule("mod.kill_process_tree").to == "vllm.utils.system_utils.kill_process_tree"
    with pytest.raises(KeyError, match="no rule with id"):
        loaded.rule("no.such.rule")


def test_no_rule_targets_a_vllm_srt_module():
    assert not [rule.id for rule in rules().rules if "vllm.srt" in rule.to]


@pytest.mark.parametrize(
    ("upstream", "downstream"),
    [
        ("slime/backends/sglang_utils/sglang_engine.py", "vime/backends/vllm_utils/vllm_engine.py"),
        ("slime/rollout/sglang_rollout.py", "vime/rollout/vllm_rollout.py"),
        ("slime/backends/megatron_utils/sglang.py", "vime/backends/megatron_utils/vllm_compat.py"),
        ("slime_plugins/models/glm.py", "vime_plugins/models/glm.py"),
        ("tests/utils/test_sglang_config.py", "tests/utils/test_vllm_config.py"),
        ("examples/slime_like/sglang_notes.md", "examples/slime_like/vllm_notes.md"),
        ("examples/strands_sglang/run.py", "examples/strands_sglang/run.py"),
        ("docs/en/advanced/sglang-config.md", "docs/en/advanced/vllm-config.md"),
        ("docker/Dockerfile", "docker/Dockerfile"),
        ("docker/patch/v0.5.9/sglang.patch", None),
        ("docker/npu_patch/sglang.patch", None),
        (".github/workflows/pr-test.yml", None),
    ],
)
def test_map_path(upstream, downstream):
    assert rules().map_path(upstream) == downstream


def test_module_rules_prefer_the_longest_prefix():
    loaded = rules()
    assert (
        loaded.map_dotted("slime.rollout.sglang_rollout.generate")[0] == "vime.rollout.vllm_rollout.generate"
    )
    assert loaded.map_dotted("slime.utils.misc")[0] == "vime.utils.misc"
    new, rule = loaded.map_dotted("sglang.srt.managers.io_struct.UpdateWeightsFromDiskReqInput")
    assert new is None and rule.status == "unsupported"
    # a member rule beats its module's: SGLang's Tool struct is served by vime.compat's parsers
    assert loaded.map_dotted("sglang.srt.managers.io_struct.Tool")[0] == "vime.compat.client_parsers.Tool"
    assert loaded.map_dotted("numpy.linalg") == (None, None)


def test_hash_is_stable_and_follows_the_contents(tmp_path):
    copy = tmp_path / "t"
    shutil.copytree(DEFAULT_DIRECTORY, copy)
    assert load_rules(copy).hash == load_rules(DEFAULT_DIRECTORY).hash
    table = copy / "kwargs.toml"
    table.write_text(table.read_text().replace("Sampling parameter: response length limit.", "changed"))
    assert load_rules(copy).hash != load_rules(DEFAULT_DIRECTORY).hash


def test_loading_a_broken_table_is_a_one_line_error(tmp_path):
    (tmp_path / "bad.toml").write_text(
        'kind = "module"\n[[rule]]\nid = "x"\nfrom = "a"\nstatus = "maybe"\nnote = "n"\n'
    )
    with pytest.raises(RuleTableError, match=r"bad.toml: rule 'x' has status 'maybe'; use one of"):
        load_rules(tmp_path)
    with pytest.raises(RuleTableError, match="no \\*.toml rule tables"):
        load_rules(tmp_path / "empty" if (tmp_path / "empty").mkdir() is None else None)


def test_default_directory_is_the_repository_translations():
    assert Path(__file__).resolve().parents[1] / "translations" == DEFAULT_DIRECTORY
