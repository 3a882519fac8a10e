"""Python translation rule by rule: positive and negative cases on small upstream-style sources."""

from __future__ import annotations

import ast

import libcst as cst
from translate_helpers import fixture, rule_ids, text_of, translate

ENGINE = "slime/backends/sglang_utils/sglang_engine.py"
ROLLOUT = "slime/rollout/sglang_rollout.py"


def test_engine_fixture_imports_map_to_real_vllm_modules_and_unsupported_ones_stay():
    result = translate(ENGINE, fixture("engine_upstream.py.txt"))
    out = text_of(result)
    assert result.dst_path == "vime/backends/vllm_utils/vllm_engine.py"
    assert "import vllm_router\n" in out
    assert "from vllm.engine.arg_utils import EngineArgs\n" in out
    assert "from vllm.utils.system_utils import kill_process_tree\n" in out
    assert "from vime.backends.vllm_utils.vllm_config import VLLMServerConfig\n" in out
    assert "vllm.srt" not in out
    # no vLLM equivalent: the import stays and is reported as a review question
    assert "from sglang.srt.constants import GPU_MEMORY_TYPE_WEIGHTS" in out
    assert "mod.srt_constants" in {hit.rule_id for hit in result.unsupported}
    assert result.unmapped == []


def test_names_bound_by_imports_follow_their_import():
    out = text_of(translate(ENGINE, fixture("engine_upstream.py.txt")))
    assert "server_args = EngineArgs(model_path=self.args.hf_checkpoint)" in out
    assert "vllm_router.__version__" in out
    assert "class VLLMEngine:" in out
    assert "self.vllm_overrides = vllm_overrides or {}" in out
    assert (
        "args.vllm_router_ip" in out and "args.vllm_router_port" in out
    )  # --sglang-router-ip -> --vllm-router-ip


def test_endpoints_in_fstrings_and_route_names_given_to_the_request_helper():
    result = translate(ENGINE, fixture("engine_upstream.py.txt"))
    out = text_of(result)
    assert 'f"{self.url}/reset_prefix_cache"' in out
    assert 'self._make_request("sleep")' in out
    assert 'f"{self.url}/wake_up"' in out
    # only in slime's own SGLang patches: left, reported under its rule
    assert 'self._make_request("pull_weights")' in out
    assert "ep.pull_weights" in {hit.rule_id for hit in result.unsupported}
    assert {"ep.flush_cache", "ep.release_memory", "ep.resume_memory"} <= rule_ids(result)


def test_comments_and_links_follow_their_rules_not_a_blind_replace():
    out = text_of(translate(ENGINE, fixture("engine_upstream.py.txt")))
    assert "# The vLLM engine wrapper (upstream style)." in out
    assert "https://github.com/sgl-project/sglang" in out  # a link to SGLang stays a link to SGLang
    assert '"""Owns one vLLM server process."""' in out


def test_rollout_payload_kwargs_and_response_shape():
    result = translate(ROLLOUT, fixture("rollout_upstream.py.txt"))
    out = text_of(result)
    assert result.dst_path == "vime/rollout/vllm_rollout.py"
    assert "/inference/v1/generate" in out
    assert "max_tokens=args.rollout_max_response_len, include_stop_str_in_output=True" in out
    assert '{"token_ids": input_ids, "sampling_params": {**sampling_params, "logprobs": 0}}' in out
    assert 'if output["choices"][0].get("logprobs") is not None:' in out
    assert 'tokens = [item["token_id"] for item in output["choices"][0]["logprobs"]["content"]]' in out
    assert 'log_probs = [item["logprob"] for item in output["choices"][0]["logprobs"]["content"]]' in out
    assert 'finish = output["choices"][0]["finish_reason"]' in out
    ast.parse(out)
    hits = {hit.rule_id for hit in result.unsupported}
    assert hits == {"shape.meta_info_other"}  # update_from_meta_info: adapted by hand


def test_pairs_used_whole_are_rebuilt_from_vllm_entries():
    source = 'pairs = out["meta_info"]["output_token_logprobs"]\n'
    out = text_of(translate("slime/x.py", source))
    assert (
        out
        == 'pairs = [[entry["logprob"], entry["token_id"]] for entry in out["choices"][0]["logprobs"]["content"]]\n'
    )


def test_meta_get_chain_and_finish_reason_get():
    source = (
        'meta = data.get("meta_info") or {}\n'
        'pairs = meta.get("output_token_logprobs") or []\n'
        'finish = (meta.get("finish_reason") or {}).get("type", "stop")\n'
    )
    out = text_of(translate("slime/agent/adapters/common.py", source))
    assert 'meta = (data.get("choices") or [{}])[0] or {}' in out
    assert '(meta.get("logprobs") or {}).get("content") or []' in out
    assert 'finish = meta.get("finish_reason") or "stop"' in out
    assert "meta_info" not in out and "output_token_logprobs" not in out


def test_abort_body_becomes_a_list_of_request_ids():
    source = 'requests.post(f"{url}/abort_request", json={"rid": rid})\n'
    out = text_of(translate("slime/x.py", source))
    assert out == 'requests.post(f"{url}/abort_requests", json={"request_ids": [rid]})\n'


def test_negative_fixture_is_left_byte_for_byte():
    data = fixture("negative_upstream.py.txt")
    result = translate("slime/utils/tokenize_helpers.py", data)
    assert result.data == data
    assert [a.rule_id for a in result.applied] == ["path.slime"]
    assert result.unmapped == [] and result.unsupported == []


def test_keyword_rule_leaves_other_keywords_and_positional_uses():
    source = "f(max_new_tokens=3, max_length=4)\ng(max_new_tokens)\n"
    out = text_of(translate("slime/x.py", source))
    assert out == "f(max_tokens=3, max_length=4)\ng(max_new_tokens)\n"


def test_relative_import_of_the_trainer_reexport_module_is_renamed():
    source = "from ..sglang import FlattenedTensorBucket, MultiprocessingSerializer\n"
    path = "slime/backends/megatron_utils/update_weight/update_weight_from_tensor.py"
    result = translate(path, source)
    assert text_of(result) == "from ..vllm_compat import FlattenedTensorBucket, MultiprocessingSerializer\n"


def test_first_party_names_are_renamed_in_import_and_uses_alike():
    source = (
        "from slime.agent.adapters.common import call_sglang_generate\n"
        "from slime.backends.sglang_utils.arguments import validate_args as sglang_validate_args\n"
        "call_sglang_generate()\nsglang_validate_args(args)\n"
    )
    out = text_of(translate("slime/agent/adapters/openai.py", source))
    assert out == (
        "from vime.agent.adapters.common import call_vllm_generate\n"
        "from vime.backends.vllm_utils.arguments import validate_args as vllm_validate_args\n"
        "call_vllm_generate()\nvllm_validate_args(args)\n"
    )


def test_alias_of_an_unsupported_import_is_protected_and_covered():
    source = (
        "from sglang.srt.disaggregation.encode_server import launch_server_process as sglang_launch\n"
        "sglang_launch(server_args)\n"
    )
    result = translate("slime/backends/sglang_utils/sglang_engine.py", source)
    assert text_of(result) == source
    assert result.unmapped == []
    assert {hit.line for hit in result.unsupported} == {1, 2}


def test_unknown_sglang_import_is_reported_as_unmapped():
    source = "from sglang.srt.brand_new import thing\n"
    result = translate("slime/x.py", source)
    assert text_of(result) == source
    assert [(ref.path, ref.line) for ref in result.unmapped] == [("slime/x.py", 1)]


def test_flags_and_their_argparse_dests_agree():
    source = (
        'parser.add_argument("--sglang-mem-fraction-static", type=float)\n'
        'parser.add_argument("--sglang-attention-backend")\n'
        "use(args.sglang_mem_fraction_static, args.sglang_attention_backend)\n"
        'if getattr(args, "sglang_enable_deterministic_inference", False): pass\n'
    )
    result = translate("slime/utils/arguments.py", source)
    out = text_of(result)
    assert '"--vllm-gpu-memory-utilization"' in out and '"--vllm-attention-backend"' in out
    assert "args.vllm_gpu_memory_utilization, args.vllm_attention_backend" in out
    assert '"sglang_enable_deterministic_inference"' in out  # no vLLM flag: left, covered
    assert result.unmapped == []
    assert "flag.enable_deterministic_inference" in {hit.rule_id for hit in result.unsupported}


def test_environment_variables_by_rule():
    source = (
        'env = {"SGLANG_JIT_DEEPGEMM_PRECOMPILE": "true", "SGLANG_ENABLE_DETERMINISTIC_INFERENCE": "1"}\n'
    )
    result = translate("slime/ray/rollout.py", source)
    out = text_of(result)
    assert '"SGLANG_JIT_DEEPGEMM_PRECOMPILE"' in out and '"VLLM_BATCH_INVARIANT"' in out
    assert "env.any" in {hit.rule_id for hit in result.unsupported}


def test_dotted_paths_in_strings_follow_module_rules():
    source = 'DEFAULT = "slime.rollout.sglang_rollout.generate_rollout"\n'
    out = text_of(translate("slime/utils/arguments.py", source))
    assert out == 'DEFAULT = "vime.rollout.vllm_rollout.generate_rollout"\n'


def test_formatting_and_comments_survive_untouched_lines():
    source = "x = [ 1,2 ,3 ]  # odd   spacing kept\n\n\n# sglang_url in a comment\ny = sglang_url\n"
    out = text_of(translate("slime/x.py", source))
    assert out == "x = [ 1,2 ,3 ]  # odd   spacing kept\n\n\n# vllm_url in a comment\ny = vllm_url\n"
    cst.parse_module(out)


def test_unrelated_sglang_strings_follow_their_rules():
    source = (
        'DOCS = "https://docs.sglang.ai/backend/server_arguments.html"\n'
        'PACKAGE = "strands_sglang"\n'
        'RAW = b"/generate sglang"\n'
        'ISSUE = "fixed upstream in sgl-project/sglang#6184"\n'
        'BACKENDS = ["sglang", "megatron"]\n'
    )
    result = translate("slime/x.py", source)
    out = text_of(result).split("\n")
    assert out[:4] == source.split("\n")[:4]  # links, third-party names, bytes, issue refs stay
    assert (
        out[4] == 'BACKENDS = ["vllm", "megatron"]'
    )  # an identifier-shaped engine name follows the name rule
    assert [ref.line for ref in result.unmapped] == [3]  # bytes are data: left, and listed for a reviewer


def test_names_imported_from_the_upstream_test_package_follow_the_name_rules():
    source = "from tests.test_agent._fakes import FakeSGLangServer\nserver = FakeSGLangServer()\n"
    result = translate("tests/test_agent/test_adapters.py", source)
    assert (
        text_of(result) == "from tests.test_agent._fakes import FakeVLLMServer\nserver = FakeVLLMServer()\n"
    )
    assert result.unmapped == []
