"""Micro-batch planning (vime.backends.micro_batches) and dynamic batching in the torch backend.

The planner's promises are checked as properties over random lengths; the backend test trains
the tiny model twice on the same samples, fixed micro-batches against a token budget, and
requires equal weights afterwards and every forward within the budget.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.train_args import debug_train_args
from vime.backends.factory import make_backend
from vime.backends.micro_batches import (
    BatchingConfig,
    contiguous_shard,
    deal,
    fixed_chunks,
    forward_count,
    pack_by_budget,
    padded_positions,
    plan_forward,
    plan_training,
)
from vime.backends.train_data import TrainBatch
from vime.utils.arguments import parse_args

lengths_st = st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=64)


@settings(max_examples=200, deadline=None)
@given(lengths=lengths_st, budget=st.integers(min_value=1, max_value=1200), pad=st.sampled_from([1, 8, 128]))
def test_packing_covers_every_sample_once_within_the_budget(lengths, budget, pad):
    groups = pack_by_budget(lengths, budget, pad)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for g in groups:
        assert len(g) == 1 or padded_positions([lengths[i] for i in g], pad) <= budget


@settings(max_examples=150, deadline=None)
@given(
    lengths=lengths_st,
    ranks=st.sampled_from([1, 2, 4]),
    budget=st.integers(min_value=50, max_value=2000),
    balance=st.booleans(),
)
def test_dynamic_plan_gives_each_rank_the_same_number_of_micro_batches(lengths, ranks, budget, balance):
    n = len(lengths) - len(lengths) % ranks
    if n == 0:
        return
    lengths = lengths[:n]
    cfg = BatchingConfig(max_tokens_per_gpu=budget, log_probs_max_tokens_per_gpu=budget, balance_data=balance)
    gbs = n  # one step
    plan = plan_training(lengths, gbs, ranks, cfg)
    step = plan[0]
    assert len({len(step[r]) for r in range(ranks)}) == 1
    assert sorted(i for r in range(ranks) for g in step[r] for i in g) == list(range(n))
    for r in range(ranks):
        for g in step[r]:
            assert g and (len(g) == 1 or padded_positions([lengths[i] for i in g]) <= budget)


def test_fixed_plan_is_the_contiguous_shard_in_chunks():
    lengths = [5] * 12
    plan = plan_training(lengths, 6, 2, BatchingConfig(micro_batch_size=2))
    assert plan == [
        [fixed_chunks(contiguous_shard(6, 0, 2), 2), fixed_chunks(contiguous_shard(6, 1, 2), 2)],
        [[[6, 7], [8]], [[9, 10], [11]]],
    ]


def test_balance_data_evens_the_ranks_cost():
    costs = [100, 90, 80, 10, 10, 10, 5, 5]
    round_robin = deal(costs, 2, balance=False)
    balanced = deal(costs, 2, balance=True)
    load = lambda d: max(sum(costs[i] for i in part) for part in d)  # noqa: E731
    assert [len(p) for p in balanced] == [4, 4]
    assert load(balanced) < load(round_robin)


def test_forward_plans_line_up_across_ranks():
    # rank 0 gets two long samples, rank 1 many short ones: its forward pass needs more groups
    lengths = [900, 880, 10, 10, 10, 10, 10, 10]
    cfg = BatchingConfig(max_tokens_per_gpu=1000, log_probs_max_tokens_per_gpu=40)
    plan = plan_training(lengths, 8, 2, cfg)
    need = forward_count(lengths, plan, cfg)
    for r in range(2):
        mine = [i for g in plan[0][r] for i in g]
        groups = plan_forward([lengths[i] for i in mine], cfg, at_least=need)
        assert len(groups) == need or len(groups) == len(mine)


def _args(model_dir: Path, *extra: str):
    return debug_train_args(
        model_dir,
        "--global-batch-size", "8",
        "--optimizer", "sgd",  # a linear update: weights differ only as much as the gradients
        *extra,
        batch=4,
        rollouts=2,
    )  # fmt: skip


def _data() -> dict:
    gen = torch.Generator().manual_seed(0)
    tokens, lengths = [], []
    for _ in range(8):
        n = int(torch.randint(3, 40, (1,), generator=gen))
        response = int(torch.randint(1, n, (1,), generator=gen))
        tokens.append(torch.randint(3, 200, (n,), generator=gen).tolist())
        lengths.append(response)
    return {
        "tokens": tokens,
        "response_lengths": lengths,
        "rewards": [1.0, -1.0] * 4,
        "loss_masks": [[1] * n for n in lengths],
    }


def _train_once(model_dir: Path, *extra: str):
    backend = make_backend(_args(model_dir, *extra), rank=0, world_size=1)
    backend.init()
    widths: list[tuple[int, int]] = []
    hook = backend.model.register_forward_pre_hook(
        lambda _m, _a, kw: widths.append(tuple(kw["input_ids"].shape)), with_kwargs=True
    )
    metrics = backend.train(0, TrainBatch.from_rollout_data(_data()))
    hook.remove()
    return backend, metrics, widths


def test_dynamic_batching_trains_the_same_weights_within_the_budget(tiny_model_dir):
    _, fixed_metrics, fixed_shapes = _train_once(tiny_model_dir)
    budget = 100
    backend, dyn_metrics, dyn_shapes = _train_once(
        tiny_model_dir, "--use-dynamic-batch-size", "--max-tokens-per-gpu", str(budget)
    )
    reference = make_backend(_args(tiny_model_dir), rank=0, world_size=1)
    reference.init()
    reference.train(0, TrainBatch.from_rollout_data(_data()))
    for (name, got), (_, want) in zip(
        backend.model.named_parameters(), reference.model.named_parameters(), strict=True
    ):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5, msg=name)
    assert dyn_metrics["grad_norm"] == pytest.approx(fixed_metrics["grad_norm"], rel=1e-5)
    assert dyn_metrics["entropy"] == pytest.approx(fixed_metrics["entropy"], rel=1e-5)
    # the budget, not --micro-batch-size, shaped the forwards: none over it unless one sample
    assert all(b * w <= budget or b == 1 for b, w in dyn_shapes)
    assert sorted(dyn_shapes) != sorted(fixed_shapes)
    assert any(b > 2 for b, _ in dyn_shapes)  # short samples share a micro-batch beyond 2


def test_dynamic_batching_needs_its_budget(capsys):
    with pytest.raises(SystemExit):
        parse_args(
            [
                "--debug-train-only",
                "--rollout-batch-size",
                "1",
                "--num-rollout",
                "1",
                "--use-dynamic-batch-size",
            ]
        )
    assert "--max-tokens-per-gpu" in capsys.readouterr().err
