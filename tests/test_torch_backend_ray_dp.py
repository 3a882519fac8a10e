"""Two training ranks as real Ray actors over gloo train exactly like one process (FSDP2 and DDP)."""

import pytest
import torch

from tests.train_args import debug_train_args
from vime.backends.factory import make_backend
from vime.backends.train_data import TrainBatch
from vime.ray.placement_group import PlacementSlice
from vime.ray.train_actor import TrainGroup


def _args(model_dir, *extra):
    return debug_train_args(model_dir, *extra, rollouts=2, micro=1)


DATA = {
    "tokens": [[5, 6, 7, 8, 9, 10], [5, 6, 7, 11, 12], [20, 21, 22, 23], [20, 21, 30, 31, 32, 33, 34]],
    "response_lengths": [3, 2, 1, 4],
    "rewards": [1.0, -1.0, 0.5, -0.5],
    "loss_masks": [[1, 1, 1], [1, 1], [1], [1, 1, 1, 0]],
}


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["fsdp2", "ddp"])
def test_two_ranks_match_one_process(tiny_model_dir, ray_session, strategy, tmp_path):
    single = make_backend(_args(tiny_model_dir), rank=0, world_size=1)
    single.init()
    expected_metrics = single.train(0, TrainBatch.from_rollout_data(DATA))
    expected = single.compute_logprobs(TrainBatch.from_rollout_data(DATA))

    args = _args(tiny_model_dir, "--actor-num-gpus-per-node", "2", "--torch-dist-strategy", strategy,
                 "--update-weight-disk-dir", str(tmp_path / "weights"))  # fmt: skip
    group = TrainGroup(args, PlacementSlice(None))
    try:
        assert group.init() == 0
        metrics = group.train(0, DATA)
        got = group.compute_logprobs(DATA)
        for key in ("pg_loss", "ppo_kl", "entropy"):
            assert metrics[key] == pytest.approx(expected_metrics[key], abs=1e-5), key
        for g, e in zip(got, expected, strict=True):
            torch.testing.assert_close(torch.tensor(g), e, atol=2e-5, rtol=1e-4)
        group.update_weights(rollout_manager=None)
        assert (tmp_path / "weights" / "v000001" / "model.safetensors").exists()
    finally:
        group.kill()
