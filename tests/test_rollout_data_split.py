"""The rollout manager's split per data-parallel rank gives each rank exactly what it picked before.

Before, every rank received the whole rollout and chose its share with the micro-batch planner; now
the manager splits the rollout with the same planner and sends each rank its share alone. The
reference below is the selection the backends ran before the change, copied verbatim, so a planner
change that altered which samples a rank trains would show here.
"""

import random
from argparse import Namespace

import pytest
import ray

from vime.backends.micro_batches import BatchingConfig, forward_count, plan_forward, plan_training
from vime.backends.torch_utils.actor import TorchTrainBackend
from vime.backends.train_data import TrainBatch
from vime.ray.rollout_data import RolloutShards, rollout_summary, shards_for_training, split_by_data_parallel

CONFIGS = {
    "fixed": dict(micro_batch_size=2),
    "balance_data": dict(micro_batch_size=3, balance_data=True),
    "dynamic": dict(use_dynamic_batch_size=True, max_tokens_per_gpu=96),
    "dynamic_balanced": dict(use_dynamic_batch_size=True, max_tokens_per_gpu=80, balance_data=True),
    "dynamic_padded": dict(
        use_dynamic_batch_size=True, max_tokens_per_gpu=120, log_probs_max_tokens_per_gpu=200,
        data_pad_size_multiplier=8, balance_data=True,
    ),
}  # fmt: skip


def _args(**overrides) -> Namespace:
    values = dict(
        global_batch_size=16, micro_batch_size=1, use_dynamic_batch_size=False, max_tokens_per_gpu=None,
        tensor_model_parallel_size=None,
        log_probs_max_tokens_per_gpu=None, balance_data=False, data_pad_size_multiplier=1,
    )  # fmt: skip
    return Namespace(**(values | overrides))


def _rollout(n: int, seed: int) -> dict[str, list]:
    """Samples of varied lengths with the per-sample extras a rollout carries, and one key that is not
    per-sample (dropped by the trainer, before and after)."""
    rng = random.Random(seed)
    data: dict[str, list] = {k: [] for k in ("tokens", "response_lengths", "rewards", "loss_masks")}
    data |= {"rollout_log_probs": [], "raw_reward": [], "sample_indices": [], "truncated": []}
    for i in range(n):
        prompt, response = rng.randint(2, 30), rng.randint(1, 40)
        data["tokens"].append([rng.randrange(1000) for _ in range(prompt + response)])
        data["response_lengths"].append(response)
        data["rewards"].append(rng.uniform(-1, 1))
        data["loss_masks"].append([rng.randint(0, 1) for _ in range(response)])
        data["rollout_log_probs"].append([-rng.random() for _ in range(response)])
        data["raw_reward"].append(float(rng.randint(0, 1)))
        data["sample_indices"].append(1000 + i)
        data["truncated"].append(rng.randint(0, 1))
    data["per_step_note"] = ["not", "per", "sample"]
    return data


def _before(data: dict[str, list], args: Namespace, rank: int, ranks: int):
    """What a rank trained on before the split moved to the manager: the whole batch, then its pick."""
    batch = TrainBatch.from_rollout_data(data)
    batching = BatchingConfig.from_args(args)
    lengths = [len(t) for t in batch.tokens]
    plan = plan_training(lengths, args.global_batch_size, ranks, batching)
    mine = [step[rank] for step in plan]
    order = [i for step in mine for group in step for i in group]
    local = batch.select(order)
    position = {index: p for p, index in enumerate(order)}
    local_steps = [[[position[i] for i in group] for group in step] for step in mine]
    at_least = forward_count(lengths, plan, batching) if ranks > 1 else 0
    groups = plan_forward([lengths[i] for i in order], batching, at_least=at_least)
    return local, local_steps, groups, max(0, at_least - len(groups))


def _backend(args: Namespace, rank: int, ranks: int) -> TorchTrainBackend:
    """The torch backend with only what its data selection reads (no model)."""
    backend = TorchTrainBackend(args, rank, ranks)
    backend.batching = BatchingConfig.from_args(args)
    backend._forward_plan = None
    return backend


def _same_samples(got: TrainBatch, want: TrainBatch) -> None:
    assert got.tokens == want.tokens
    assert got.response_lengths == want.response_lengths
    assert got.rewards == want.rewards
    assert got.loss_masks == want.loss_masks
    assert got.rollout_log_probs == want.rollout_log_probs
    assert got.extras == want.extras


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_each_rank_gets_the_samples_and_plan_it_picked_before(config, ranks):
    args = _args(**CONFIGS[config])
    data = _rollout(48, seed=ranks)  # three optimizer steps of 16
    shares = split_by_data_parallel(data, args, ranks)
    assert len(shares) == ranks
    trained = []
    for rank, share in enumerate(shares):
        want, want_steps, want_groups, want_idle = _before(data, args, rank, ranks)
        for given in (share, TrainBatch.from_rollout_data(data)):  # split by the manager, or whole
            backend = _backend(args, rank, ranks)
            local, steps = backend._shard(given)
            _same_samples(local, want)
            assert steps == want_steps
            assert backend._forward_plan[1:] == (want_groups, want_idle)
        trained += share.extras["sample_indices"]
    assert sorted(trained) == data["sample_indices"], "every sample on exactly one rank"


def test_a_missing_rollout_log_prob_drops_them_on_every_rank_as_before():
    args = _args(micro_batch_size=2)
    data = _rollout(16, seed=7)
    data["rollout_log_probs"][3] = None  # on rank 0's half only
    for rank, share in enumerate(split_by_data_parallel(data, args, 2)):
        _same_samples(share, _before(data, args, rank, 2)[0])
        assert share.rollout_log_probs is None


def test_bad_rollout_data_is_refused_where_it_is_split():
    data = _rollout(4, seed=1)
    data["loss_masks"][1] = data["loss_masks"][1] + [1]
    with pytest.raises(ValueError, match="sample 1: loss_mask has"):
        split_by_data_parallel(data, _args(global_batch_size=4), 2)


def test_shards_go_through_the_object_store_one_per_rank(ray_session):
    """Ray real: each reference holds one rank's share; the driver's object has no samples."""
    args = _args(**CONFIGS["dynamic_balanced"])
    data = _rollout(32, seed=3)
    shards = shards_for_training(data, args, 4)
    assert isinstance(shards, RolloutShards) and shards.whole is None
    assert shards.summary == rollout_summary(data)
    assert len(shards.refs) == 4
    for rank, ref in enumerate(shards.refs):
        got = ray.get(ref)
        _same_samples(got, _before(data, args, rank, 4)[0])
        assert got.extras["sample_indices"] == [data["sample_indices"][i] for i in got.share.order]
    kept = shards_for_training(data, args, 0, keep_whole=True)
    assert kept.refs == [] and kept.whole_data() == data


def test_summary_of_an_empty_rollout_has_no_means():
    assert rollout_summary({"tokens": [], "rewards": []}) == {"rollout/samples": 0.0}
