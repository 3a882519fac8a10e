"""Engine death mid-rollout: the health monitor restarts the engine, re-syncs its weights, and the
rollout re-runs the requests it lost; no sample is lost or counted twice.

The restarted engine boots straight from the synced checkpoint (it is complete: config and
tokenizer), so this test also checks that a weight update into a running engine gives exactly
what a fresh engine started on the new checkpoint gives, at temperature 0 — without a second
engine running next to the first."""

import threading
import time

import pytest

from vime.rollout.data_source import make_data_source
from vime.rollout.generate import generate
from vime.rollout.vllm_rollout import generate_rollout
from vime.utils.types import Sample

pytestmark = pytest.mark.slow

LENGTH = 200


async def long_generate(args, sample, sampling_params):
    """Generate hook: every sample runs exactly LENGTH tokens (EOS ignored) so the kill lands mid-request."""
    return await generate(args, sample, dict(sampling_params, ignore_eos=True, max_tokens=LENGTH))


PROMPTS = [[1, 287, 201], [1, 287, 201, 293, 270, 223, 21, 13, 22, 33, 2, 201, 1, 291, 201], [9, 10, 11, 12]]


def _greedy(client) -> list[tuple[list[int], list[float]]]:
    out = []
    for prompt in PROMPTS:
        choice = client.generate(prompt, {"max_tokens": 12, "temperature": 0.0, "logprobs": 0})["choices"][0]
        out.append((choice["token_ids"], [c["logprob"] for c in choice["logprobs"]["content"]]))
    return out


def _pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def test_killed_engine_is_restarted_resynced_and_its_requests_rerun(
    make_rollout_args, rollout_manager, vllm_engine, tiny_model_dir, tiny_model_dir_seed1
):
    import ray

    before_update = _greedy(vllm_engine.client)
    rollout_manager.update_weights_from_disk(str(tiny_model_dir_seed1), "synced")
    updated_in_place = _greedy(vllm_engine.client)
    assert [t for t, _ in updated_in_place] != [t for t, _ in before_update]
    args = make_rollout_args(
        "--rollout-batch-size", "4", "--rollout-max-response-len", str(LENGTH),
        "--custom-generate-function-path", "test_vllm_fault_tolerance.long_generate",
    )  # fmt: skip
    args.vllm_router_ip, args.vllm_router_port = (
        rollout_manager.args.vllm_router_ip,
        rollout_manager.args.vllm_router_port,
    )
    result = {}
    worker = threading.Thread(
        target=lambda: result.update(out=generate_rollout(args, 0, make_data_source(args)))
    )
    recoveries_before = len(rollout_manager.monitor.recoveries)
    # What TrainGroup does after a GPU (ipc / nccl) push, whose transfer itself needs CUDA: newer
    # weights now live only in the trainer, so the restarted engine can only boot from "synced".
    rollout_manager.note_weight_version("7")
    try:
        # Freeze the engine's scheduling so the rollout's requests are certainly in flight (held
        # inside the engine) when it dies, however fast this machine generates.
        vllm_engine.client.pause("keep")
        worker.start()
        time.sleep(2.0)
        killed_pid = rollout_manager.kill_engine_server(0)
        worker.join(timeout=900)
        assert not worker.is_alive(), "rollout did not finish after the engine came back"
    finally:
        fresh = None
        if not worker.is_alive():
            assert vllm_engine.client.weight_version() == "synced"  # re-synced before serving again
            stale_engines = rollout_manager.health()["stale_engines"]
            fresh = _greedy(vllm_engine.client)
            rollout_manager.update_weights_from_disk(str(tiny_model_dir), "base")
            assert rollout_manager.health()["stale_engines"] == []  # every engine got the new weights

    assert not _pid_alive(killed_pid)
    recoveries = rollout_manager.monitor.recoveries[recoveries_before:]
    assert len(recoveries) == 1 and recoveries[0].weights_path == str(tiny_model_dir_seed1)
    # it says which weights it serves, and that they are older than the trainer's
    assert recoveries[0].weight_version == "synced" and recoveries[0].stale and stale_engines == [0]
    assert ray.get(vllm_engine.actor.server_pid.remote()) != killed_pid
    assert ray.get(vllm_engine.actor.info.remote())["booted_from"] == str(tiny_model_dir_seed1)
    # the fresh engine on the checkpoint answers exactly as the engine updated in place did
    for (tokens, logprobs), (fresh_tokens, fresh_logprobs) in zip(updated_in_place, fresh, strict=True):
        assert tokens == fresh_tokens and logprobs == pytest.approx(fresh_logprobs, abs=1e-4)

    assert result["out"].metrics["rollout/retried_requests"] >= 1  # the kill did cut requests short
    samples = [s for group in result["out"].samples for s in group]
    assert sorted(s.index for s in samples) == list(range(8))  # none lost, none twice
    for s in samples:
        assert s.status == Sample.Status.TRUNCATED and s.response_length == LENGTH  # no half answer kept
        assert len(s.rollout_log_probs) == LENGTH and len(s.tokens) == s.prompt_length + LENGTH
