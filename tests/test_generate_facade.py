"""SGLang's /generate served in the plugin's process for clients vime-sync cannot translate
(strands-sglang's SGLangModel): requests reach vLLM's routes, answers come back in SGLang's shape."""

from __future__ import annotations

import importlib.util
import json
import sys
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "contract"))
from engine_support import ContractEngine  # tests/contract is not a package: on the path above

from vime.compat.generate_facade import facade_for


def _post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_sglang_generate_goes_to_vllms_token_route_and_answers_in_sglangs_shape():
    """MOCK engine (the contracts' mock of vLLM's routes): the facade's translation is under test."""
    with ContractEngine(finish_reasons=["length"]) as engine:
        facade = facade_for(engine.url)
        assert facade_for(engine.url) is facade  # one per engine address and process
        status, out = _post(
            facade.url + "/generate",
            {"input_ids": [5, 6, 7], "sampling_params": {"max_new_tokens": 8, "temperature": 0.5},
             "return_logprob": True, "logprob_start_len": 2, "stream": False},
        )  # fmt: skip
        with urllib.request.urlopen(facade.url + "/health", timeout=10) as health:
            assert health.status == 200
        bad_status, bad = _post(facade.url + "/generate", {"input_ids": [1], "image_data": ["x"]})
    assert status == 200, out
    [(route, body)] = engine.requests
    assert route == "/inference/v1/generate" and body["token_ids"] == [5, 6, 7]
    assert body["sampling_params"]["max_tokens"] == 8 and body["sampling_params"]["logprobs"] == 0
    meta = out["meta_info"]
    assert out["output_ids"] == [40, 41, 42] and meta["finish_reason"]["type"] == "length"
    assert [row[:2] for row in meta["output_token_logprobs"]] == [[-0.5, 40], [-1.5, 41], [-2.5, 42]]
    assert meta["e2e_latency"] >= 0 and meta["completion_tokens"] == 3
    assert bad_status == 400 and "image_data" in bad["error"]["message"]


@pytest.mark.skipif(
    importlib.util.find_spec("strands_sglang") is None, reason="strands-sglang is not installed"
)
def test_strands_sglang_client_from_vime_args_reaches_the_engine():
    from vime.compat.generate_facade import get_client_from_slime_args
    from vime.utils.http_utils import run

    with ContractEngine() as engine:
        args = SimpleNamespace(**engine.settings, vllm_server_concurrency=4, rollout_num_engines_total=1)
        client = get_client_from_slime_args(args, timeout=30.0)
        out = run(
            client.generate(input_ids=[3, 4], sampling_params={"max_new_tokens": 4}, return_logprob=True)
        )
    assert engine.calls == 1 and out["output_ids"] == [40, 41, 42]
