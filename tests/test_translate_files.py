"""File kinds and robustness: text rules, binary, non-UTF-8, unparseable Python, not-mirrored files."""

from __future__ import annotations

from translate_helpers import fixture, rule_ids, text_of, translate


def test_shell_script_flags_launch_and_env():
    result = translate("scripts/run-qwen.sh", fixture("launch_upstream.sh"))
    out = text_of(result)
    assert "python -m vllm.entrypoints.openai.api_server --model-path" in out
    assert "--vllm-gpu-memory-utilization 0.7 --vllm-router-ip 127.0.0.1" in out
    assert "--sglang-enable-deterministic-inference" in out  # unsupported: left
    assert "SGLANG_JIT_DEEPGEMM_PRECOMPILE" in out
    assert "https://docs.sglang.ai/backend/server_arguments.html" in out
    assert "# Launch an vLLM server behind the vllm-router." in out
    assert result.unmapped == []
    assert {"flag.enable_deterministic_inference", "env.any"} <= {hit.rule_id for hit in result.unsupported}


def test_markdown_prose_paths_and_kept_links():
    result = translate("README.md", fixture("README_upstream.md"))
    out = text_of(result)
    assert "slime uses vLLM for rollout." in out  # the project's name in prose stays; the engine's changes
    assert "`vime/rollout/vllm_rollout.py`" in out
    assert "posts to `/inference/v1/generate`" in out
    assert "`--vllm-gpu-memory-utilization`" in out
    assert "[vLLM](https://github.com/sgl-project/sglang) and sgl-project/sglang#1234" in out
    assert "strands-sglang package" in out
    assert result.unmapped == []


def test_requirements_router_renamed_engine_install_reported():
    result = translate("requirements.txt", fixture("requirements_upstream.txt"))
    out = text_of(result)
    assert out.splitlines()[0] == "vllm-router>=0.3.2"
    assert out.splitlines()[1] == "sglang[all]==0.5.9"
    assert "text.sglang_pip" in {hit.rule_id for hit in result.unsupported}


def test_unparseable_python_is_left_as_upstream_wrote_it_with_a_parse_error():
    result = translate("slime/utils/broken.py", fixture("broken_upstream.py.txt"))
    assert result.kind == "python"
    assert result.parse_error is not None and "ParserSyntaxError" in result.parse_error
    assert result.dst_path == "vime/utils/broken.py"
    # no rule can tell code from prose without a parse: nothing is rewritten, every reference is listed
    assert result.data == fixture("broken_upstream.py.txt")
    assert [a.rule_id for a in result.applied] == ["path.slime"]  # the path rule only
    assert [(ref.line) for ref in result.unmapped] == [2]


def test_unparseable_python_keeps_import_sglang_and_lists_it():
    """A bug once seen: prose rules rewrote ``import sglang`` to ``import vLLM`` and the line left the report."""
    result = translate("slime/x.py", b"import sglang\n# sglang is fast\ndef f(:\n    pass\n")
    assert result.data.startswith(b"import sglang\n")
    assert [ref.line for ref in result.unmapped] == [1, 2]


def test_sglang_name_beside_an_existing_vllm_name_is_not_merged_into_it():
    """A bug once seen: ``sglang_x`` and an existing ``vllm_x`` in one scope both became ``vllm_x``."""
    result = translate("slime/x.py", b"sglang_url = 1\nvllm_url = 2\nprint(sglang_url, vllm_url)\n")
    assert b"sglang_url = 1\nvllm_url = 2\nprint(sglang_url, vllm_url)" in result.data
    assert {ref.line for ref in result.unmapped} == {1, 3}
    alone = translate("slime/y.py", b"sglang_url = 1\nprint(sglang_url)\n")
    assert alone.data == b"vllm_url = 1\nprint(vllm_url)\n"


def test_binary_file_is_untouched_but_still_mapped():
    data = b"\x89PNG\r\n\x1a\n\x00\x00sglang\x00slime"
    result = translate("slime/assets/logo.png", data)
    assert result.kind == "binary"
    assert result.data == data
    assert result.dst_path == "vime/assets/logo.png"


def test_non_utf8_text_keeps_undecodable_bytes_exactly():
    data = "# caf\u00e9 SGLang\n".encode("latin-1") + b"x = '\xff\xfe'  # /flush_cache\n"
    result = translate("slime/legacy.py", data)
    assert b"\xe9" in result.data and b"\xff\xfe" in result.data
    assert b"vLLM" in result.data and b"/reset_prefix_cache" in result.data
    reverted = result.data.replace(b"vLLM", b"SGLang").replace(b"/reset_prefix_cache", b"/flush_cache")
    assert reverted.replace(b"vime", b"slime") == data


def test_not_mirrored_files_have_no_destination():
    for path in (
        "docker/patch/v0.5.9/sglang.patch",
        "docker/amd_patch/latest/x.patch",
        ".github/workflows/ci.yml",
    ):
        result = translate(path, b"sglang everywhere\n")
        assert (
            result.kind == "not_mirrored"
            and result.dst_path is None
            and result.data == b"sglang everywhere\n"
        )
    assert translate("docker/Dockerfile", b"FROM x\n").dst_path == "docker/Dockerfile"


def test_path_rules_compose():
    assert translate("slime/backends/megatron_utils/sglang.py", b"").dst_path == (
        "vime/backends/megatron_utils/vllm_compat.py"
    )
    result = translate("slime_plugins/rollout_buffer/buffer.py", b"")
    assert result.dst_path == "vime_plugins/rollout_buffer/buffer.py"
    assert rule_ids(result) == {"path.slime_plugins"}


def test_markdown_code_follows_code_rules_and_prose_follows_prose_rules():
    source = (
        "The config has a top-level `sglang` key; SGLang reads it.\n"
        "```yaml\n"
        "sglang:\n"
        "  - name: actor  # one SGLang model\n"
        "```\n"
        "Run `python -m sglang.launch_server` or see [the docs](../advanced/sglang-config.md#sglang-config).\n"
    )
    result = translate("docs/en/x.md", source)
    assert text_of(result).split("\n") == [
        "The config has a top-level `vllm` key; vLLM reads it.",
        "```yaml",
        "vllm:",
        "  - name: actor  # one vLLM model",
        "```",
        "Run `python -m vllm.entrypoints.openai.api_server` or see [the docs](../advanced/vllm-config.md#vllm-config).",
        "",
    ]
    assert {a.line for a in result.applied if a.line} == {1, 3, 4, 6}
