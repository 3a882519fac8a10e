"""How the target API is read: raw-request handlers from their source, and the per-version cache."""

from __future__ import annotations

import json
import subprocess

import pytest

from sync.conformance import schema
from sync.conformance.build_api import _handler_facts


async def _collective_rpc(raw_request):  # shaped like vLLM's handler (the facts come from source)
    body = await raw_request.json()
    method = body.get("method")
    if method is None:
        raise ValueError("Missing 'method' in request body")
    return JSONResponse(content={"results": body.get("args", [])})  # noqa: F821


async def _wake_up(raw_request):
    tags = raw_request.query_params.getlist("tags")
    return JSONResponse(content={"status": "awake", "tags": tags})  # noqa: F821


def test_raw_handler_facts_come_from_its_source():
    rpc = _handler_facts(_collective_rpc)
    assert rpc["body"]["required"] == ["method"]
    assert set(rpc["body"]["properties"]) == {"method", "args"}
    assert set(rpc["response"]["properties"]) == {"results"}
    wake = _handler_facts(_wake_up)
    assert wake["query"] == {"tags": False} and "body" not in wake
    assert set(wake["response"]["properties"]) == {"status", "tags"}


def test_api_is_cached_per_vllm_version(tmp_path, monkeypatch):
    try:
        schema._installed_vllm()
    except schema.VllmNotInstalled:
        pytest.skip("vLLM is not installed here")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    schema.load_api.cache_clear()
    try:
        api = schema.load_api()
        [cached] = list((tmp_path / "vime-sync").glob("vllm-api-*.json"))
        assert api.version.split("==")[1] in cached.name
        assert "/reset_prefix_cache" in json.loads(cached.read_text())["routes"]

        def no_build(*args, **kwargs):
            raise AssertionError("the cached API must be read, not built again")

        monkeypatch.setattr(subprocess, "run", no_build)
        schema.load_api.cache_clear()
        again = schema.load_api()
        assert again.routes.keys() == api.routes.keys()
        assert again.match("/workers/http%3A%2F%2Fx") == "/workers/{url}"
    finally:
        schema.load_api.cache_clear()
