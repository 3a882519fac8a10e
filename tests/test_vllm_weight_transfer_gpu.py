"""The GPU weight-sync paths (vLLM's NCCL / CUDA IPC weight transfer). They need GPUs; on the CPU only
the pieces that run without one are checked and the rest is skipped."""

import pytest

from vime.backends.vllm_utils.weight_transfer import FanoutWeightSyncClient


class _RecordingEngine:
    """Stands in for an engine's HTTP client (records calls); the GPU tests below use real engines."""

    def __init__(self):
        self.calls = []

    def init_weight_transfer_engine(self, info):
        self.calls.append(("init", info))

    def start_weight_update(self):
        self.calls.append(("start", None))


def test_fanout_gives_each_engine_its_own_nccl_ranks():
    engines = [_RecordingEngine() for _ in range(3)]
    FanoutWeightSyncClient(engines, engine_world_size=2).init_weight_transfer_engine(
        {"rank_offset": 1, "world_size": 7}
    )
    assert [e.calls[0][1]["rank_offset"] for e in engines] == [1, 3, 5]
    assert all(e.calls[0][1]["world_size"] == 7 for e in engines)


def test_fanout_refuses_zero_engines():
    with pytest.raises(ValueError, match="no engines"):
        FanoutWeightSyncClient([])


def _gpus() -> int:
    try:
        import torch

        return torch.cuda.device_count()
    except ImportError:
        return 0


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(_gpus() < 2, reason="NCCL weight sync needs 2 GPUs (trainer + engine)")
def test_nccl_weight_sync_changes_engine_outputs(tiny_model_dir, tiny_model_dir_seed1, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    from vime.backends.vllm_utils.engine_client import EngineClient
    from vime.backends.vllm_utils.server_process import ServerProcess, build_server_command
    from vime.backends.vllm_utils.weight_transfer import create_nccl_sender, push_weights
    from vime.utils.http_utils import allocate_ports

    port, master_port = allocate_ports(2, start=17000)
    cmd = build_server_command(
        str(tiny_model_dir), "127.0.0.1", port,
        ["--weight-transfer-config", '{"backend": "nccl"}', "--gpu-memory-utilization", "0.2", "--enforce-eager"],
    )  # fmt: skip
    server = ServerProcess(cmd, tmp_path / "engine.log", env=None)
    server.env["CUDA_VISIBLE_DEVICES"] = "1"
    server.start()
    try:
        url = f"http://127.0.0.1:{port}"
        server.wait_healthy(url, 600)
        client = EngineClient(url)
        prompt, greedy = [1, 287, 201], {"max_tokens": 8, "temperature": 0.0}
        before = client.generate(prompt, greedy)["choices"][0]["token_ids"]
        model = AutoModelForCausalLM.from_pretrained(tiny_model_dir_seed1, dtype=torch.float32).to("cuda:0")
        sender = create_nccl_sender(model, [url], master_address="127.0.0.1", master_port=master_port)
        push_weights(sender, [client], version="1")
        after = client.generate(prompt, greedy)["choices"][0]
        assert after["token_ids"] != before and after["weight_versions"][0]["version"] == "1"
    finally:
        server.stop()
