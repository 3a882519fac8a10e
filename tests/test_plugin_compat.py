"""Plugin files keep slime's SGLang HTTP idiom through vime.compat: translation and adapter.

The translation half runs the real translator on slime-style plugin code; the adapter half checks
the request/response conversion as pure functions (the live engine is exercised by
tests/test_plugin_translation_e2e.py).
"""

from __future__ import annotations

import pytest
from translate_helpers import rule_ids, text_of, translate

from vime.compat.slime_http import SGLangRequestError, to_sglang_response, to_vllm_request
from vime.utils.types import Sample

PLUGIN = """\
from slime.utils.http_utils import post
from slime.utils.types import Sample


async def generate(args, sample, sampling_params):
    url = f"http://{args.sglang_router_ip}:{args.sglang_router_port}/generate"
    payload = {"input_ids": sample.tokens, "sampling_params": sampling_params, "return_logprob": True}
    output = await post(url, payload)
    if output["meta_info"]["finish_reason"]["type"] == "abort":
        return sample
    pairs = output["meta_info"]["output_token_logprobs"]
    return [item[1] for item in pairs], output["text"]
"""


def test_a_plugin_keeps_sglang_shapes_and_posts_through_the_adapter():
    result = translate("examples/agent/generate_agent.py", PLUGIN)
    out = text_of(result)
    assert "from vime.compat.slime_http import post" in out
    assert 'output["meta_info"]["finish_reason"]["type"] == "abort"' in out  # shape rules stay out
    assert 'output["meta_info"]["output_token_logprobs"]' in out and 'output["text"]' in out
    assert '"return_logprob": True' in out
    assert "args.vllm_router_ip" in out and "/inference/v1/generate" in out  # other rules still run
    assert "compat.http_post" in rule_ids(result)
    assert not {h.rule_id for h in result.unsupported} & {"shape.meta_info_other", "field.return_logprob"}
    assert len(out.splitlines()) == len(PLUGIN.splitlines())
    assert text_of(translate("examples/agent/generate_agent.py", out)) == out  # idempotent


def test_core_files_still_get_the_vllm_shapes():
    out = text_of(translate("slime/rollout/agent_rollout.py", PLUGIN))
    assert "from vime.utils.http_utils import post" in out
    assert 'output["choices"][0]["finish_reason"] == "abort"' in out


def test_an_import_the_adapter_cannot_serve_is_left_for_review():
    source = "from slime.utils.http_utils import post, init_http_client\n"
    result = translate("examples/agent/generate_agent.py", source)
    assert "compat.http_post" in {h.rule_id for h in result.unsupported}


def test_token_ids_go_to_the_token_route_and_text_to_completions():
    route, body, logprob = to_vllm_request(
        {
            "input_ids": [5, 6],
            "sampling_params": {"max_new_tokens": 4, "no_stop_trim": True, "stop": "</a>"},
            "return_logprob": True,
        }
    )
    assert route == "/inference/v1/generate" and logprob and body["token_ids"] == [5, 6]
    assert body["sampling_params"] == {
        "max_tokens": 4,
        "include_stop_str_in_output": True,
        "stop": ["</a>"],
        "logprobs": 0,
    }
    route, body, logprob = to_vllm_request(
        {"text": "hi", "sampling_params": {"max_tokens": 3, "logprobs": 0}}
    )
    assert route == "/v1/completions" and not logprob and body["prompt"] == "hi" and "logprobs" not in body
    assert body["return_token_ids"] is True and body["max_tokens"] == 3
    with pytest.raises(SGLangRequestError, match="image_data"):
        to_vllm_request({"text": "hi", "image_data": ["x"]})
    # keys that ask for nothing (no image, routed experts not wanted), as strands-sglang sends them
    route, body, _ = to_vllm_request(
        {"input_ids": [1], "image_data": None, "return_routed_experts": False, "routed_experts_start_len": 0}
    )
    assert route == "/inference/v1/generate" and body["token_ids"] == [1]
    with pytest.raises(SGLangRequestError, match="return_routed_experts, routed_experts_start_len"):
        to_vllm_request({"input_ids": [1], "return_routed_experts": True, "routed_experts_start_len": 0})
    with pytest.raises(SGLangRequestError, match="one prompt per call"):
        to_vllm_request({"input_ids": [[1], [2]]})


def test_answers_come_back_in_sglang_shape():
    generate = {
        "choices": [
            {
                "token_ids": [7, 8],
                "text": "ab",
                "finish_reason": "length",
                "logprobs": {"content": [{"logprob": -0.5}, {"logprob": -1.0}]},
                "weight_versions": [{"version": "3", "start": 0, "end": 2}],
            }
        ],
        "usage": {"prompt_tokens": 2, "completion_tokens": 2},
    }
    out = to_sglang_response(generate, True, "r1")
    assert out["text"] == "ab" and out["output_ids"] == [7, 8]
    assert out["meta_info"]["output_token_logprobs"] == [[-0.5, 7, None], [-1.0, 8, None]]
    assert (
        out["meta_info"]["finish_reason"] == {"type": "length"} and out["meta_info"]["weight_version"] == "3"
    )
    completion = {
        "choices": [
            {
                "token_ids": [9],
                "text": "c",
                "finish_reason": "stop",
                "stop_reason": "</a>",
                "logprobs": {"token_logprobs": [-0.25]},
            }
        ]
    }
    out = to_sglang_response(completion, True, "r2")
    assert out["meta_info"]["output_token_logprobs"] == [[-0.25, 9, None]]
    assert out["meta_info"]["finish_reason"] == {"type": "stop", "matched": "</a>"}
    assert "output_token_logprobs" not in to_sglang_response(completion, False, "r3")["meta_info"]


def test_slime_spelling_of_append_response_tokens_keeps_masks_and_log_probs_aligned():
    sample = Sample(tokens=[1, 2])
    meta = {"finish_reason": {"type": "stop"}, "weight_version": "4", "prompt_tokens": 2}
    sample.append_response_tokens(None, tokens=[3, 4], log_probs=[-0.1, -0.2], trainable=True, meta_info=meta)
    sample.append_response_tokens(None, tokens=[5, 6], trainable=False)
    sample.append_response_tokens([7], [-0.3], meta_info={"finish_reason": "length"})  # vime's, vLLM choice
    assert sample.tokens == [1, 2, 3, 4, 5, 6, 7] and sample.loss_mask == [1, 1, 0, 0, 1]
    assert sample.rollout_log_probs == [-0.1, -0.2, 0.0, 0.0, -0.3]
    assert sample.status == Sample.Status.TRUNCATED and sample.weight_versions == ["4"]
