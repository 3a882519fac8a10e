"""Colocated CUDA-IPC weight updates and sleep/wake against a real CUDA vLLM engine (one GPU).

Skipped without CUDA (CI has none): these ran on the lent H200 with vLLM 0.26 (docs/rollout.md).
The engine starts from the tiny model (seed 0); the trainer holds the seed-1 weights on the same GPU
and pushes them through both IPC routes; the answers must equal those of an engine started fresh
from the seed-1 checkpoint, also after a level-2 sleep → wake weights → update → wake KV cycle.
"""

from __future__ import annotations

import os

import pytest


def _cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.slow,
    pytest.mark.skipif(not _cuda(), reason="needs an NVIDIA GPU and a CUDA vLLM"),
]

PROMPTS = [[5, 17, 42, 99, 7, 3], [11, 12, 13, 14, 15, 16, 17, 18]]
GREEDY = {"max_tokens": 12, "temperature": 0.0, "logprobs": 0, "ignore_eos": True}


def _answers(client) -> list[tuple[list[int], list[float]]]:
    out = []
    for prompt in PROMPTS:
        choice = client.generate(prompt, GREEDY)["choices"][0]
        out.append((choice["token_ids"], [c["logprob"] for c in choice["logprobs"]["content"]]))
    return out


def _engine(model_dir, port: int, log, extra: list[str]):
    from vime.backends.vllm_utils.engine_client import EngineClient
    from vime.backends.vllm_utils.server_process import ServerProcess, build_server_command

    env = dict(os.environ, VLLM_ALLOW_INSECURE_SERIALIZATION="1")
    env.setdefault("VLLM_USE_FLASHINFER_SAMPLER", "0")
    args = ["--enforce-eager", "--gpu-memory-utilization", "0.15", "--max-model-len", "512", *extra]
    server = ServerProcess(build_server_command(str(model_dir), "127.0.0.1", port, args), log, env)
    server.start()
    server.wait_healthy(f"http://127.0.0.1:{port}", 600)
    return server, EngineClient(f"http://127.0.0.1:{port}")


def _fresh_answers(model_dir, port: int, log) -> list[tuple[list[int], list[float]]]:
    """The answers of an engine started fresh from ``model_dir`` (the reference of every update)."""
    server, client = _engine(model_dir, port, log, [])
    try:
        return _answers(client)
    finally:
        server.stop()


def _assert_same_answers(answers, expected, name: str) -> None:
    """Same greedy tokens, log-probs within 1e-3."""
    assert [t for t, _ in answers] == [t for t, _ in expected], name
    for (_, lp), (_, ref_lp) in zip(answers, expected, strict=True):
        assert max(abs(a - b) for a, b in zip(lp, ref_lp, strict=True)) < 1e-3, name


def test_ipc_update_equals_fresh_engine(tiny_model_dir, tiny_model_dir_seed1, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    from vime.backends.megatron_utils.buckets import plan_buckets, specs_of
    from vime.backends.megatron_utils.weight_export import send_weights
    from vime.backends.vllm_utils.weight_transfer import IpcBucketSink, push_weights
    from vime.utils.http_utils import allocate_ports

    port, fresh_port = allocate_ports(2, start=17100)
    trainer = AutoModelForCausalLM.from_pretrained(tiny_model_dir_seed1, dtype=torch.float32).to("cuda")
    weights = [(k, v.detach()) for k, v in trainer.state_dict().items()]
    plan = plan_buckets(specs_of(weights), 64 << 10)  # small buckets: many of them
    assert len(plan) > 3

    server, client = _engine(
        tiny_model_dir,
        port,
        tmp_path / "engine.log",
        ["--enable-sleep-mode", "--weight-transfer-config", '{"backend": "ipc"}'],
    )
    got = {}
    try:
        before = _answers(client)
        for api in ("weight-transfer", "collective-rpc"):
            sink = IpcBucketSink([client], api)
            push_weights([client], lambda s=sink: send_weights(iter(weights), plan, s, progress=False), "1")
            got[api] = _answers(client)
        client.sleep(2)
        assert client.is_sleeping()
        client.wake_up(["weights"])
        sink = IpcBucketSink([client], "weight-transfer")
        push_weights([client], lambda: send_weights(iter(weights), plan, sink, progress=False))
        client.wake_up(["kv_cache"])
        got["after level-2 cycle"] = _answers(client)
    finally:
        server.stop()
    reference = _fresh_answers(tiny_model_dir_seed1, fresh_port, tmp_path / "fresh.log")
    assert [t for t, _ in before] != [t for t, _ in reference]  # the update has something to change
    for name, answers in got.items():
        _assert_same_answers(answers, reference, name)


def test_vime_route_updates_in_place_equal_fresh_engines(tiny_model_dir, tiny_model_dir_seed1, tmp_path):
    """``/vime/update_weights``: the engine copies from the trainer's own parameters (recorded, then replayed)."""
    import torch
    from transformers import AutoModelForCausalLM

    from vime.backends.megatron_utils.buckets import plan_buckets, specs_of
    from vime.backends.megatron_utils.weight_export import send_weights
    from vime.backends.vllm_utils.ipc_views import VimeIpcSink
    from vime.backends.vllm_utils.weight_transfer import push_weights
    from vime.utils.http_utils import allocate_ports

    port, fresh_port = allocate_ports(2, start=17200)
    trainer = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).to("cuda")
    b = AutoModelForCausalLM.from_pretrained(tiny_model_dir_seed1, dtype=torch.float32).to("cuda")
    weights = [(k, v.detach()) for k, v in trainer.state_dict().items()]
    weights_b = dict(b.state_dict())

    def become(source: dict) -> None:
        with torch.no_grad():
            for name, tensor in weights:
                tensor.copy_(source[name])

    weights_a = {k: v.clone() for k, v in weights}
    server, client = _engine(tiny_model_dir, port, tmp_path / "engine.log", ["--enable-sleep-mode"])
    got, stats = {}, {}
    try:
        assert client.has_vime_routes()
        before = _answers(client)
        kept = VimeIpcSink([client], keep=True)
        push_weights([client], lambda: kept.send_views(weights), "a", sink=kept)
        stats["recorded"] = kept.answers[-1]["results"][0]
        got["recorded load of A"] = _answers(client)
        become(weights_b)
        push_weights([client], lambda: kept.send_views(weights), "b", sink=kept)
        stats["replayed"] = kept.answers[-1]["results"][0]
        got["replay of B"] = _answers(client)
        become(weights_a)
        packed = VimeIpcSink([client], keep=False)
        plan = plan_buckets(specs_of(weights), 64 << 10)
        push_weights([client], lambda: send_weights(iter(weights), plan, packed, progress=False), sink=packed)
        got["packed buckets of A"] = _answers(client)
        client.sleep(2)
        client.wake_up(["weights"])
        become(weights_b)
        push_weights([client], lambda: kept.send_views(weights), "b2", sink=kept)
        stats["asleep"] = kept.answers[-1]
        client.wake_up(["kv_cache"])
        got["level-2 cycle, B"] = _answers(client)
        kept.close()
    finally:
        server.stop()
    reference = _fresh_answers(tiny_model_dir_seed1, fresh_port, tmp_path / "fresh.log")
    assert stats["recorded"]["recorded"] and stats["recorded"]["replayable"], stats
    assert not stats["replayed"]["recorded"] and stats["replayed"]["opened"] == 0, stats
    assert stats["asleep"]["paused"] is False  # /sleep had paused it and cleared its caches
    assert [t for t, _ in before] != [t for t, _ in reference]
    for name, answers in got.items():
        _assert_same_answers(answers, before if "of A" in name else reference, name)
