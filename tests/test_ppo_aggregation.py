"""Loss aggregation is invariant to how the global batch is split (micro-batches and DP ranks)."""

import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from tests.net_helpers import free_port
from vime.algorithms import AGG_MODES, LossConfig, actor_loss, aggregate, global_denominator, masked_whiten


def _batch(seed: int = 0, batch: int = 6, tokens: int = 5):
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([5, 1, 3, 4, 2, 5])[:batch]
    mask = (torch.arange(tokens).unsqueeze(0) < lengths.unsqueeze(1)).float()
    logp = torch.randn(batch, tokens, generator=gen) * 0.1 - 1.0
    old = logp + torch.randn(batch, tokens, generator=gen) * 0.05
    adv = torch.randn(batch, 1, generator=gen).expand(batch, tokens).clone()
    return logp, old, adv, mask


@pytest.mark.parametrize("mode", AGG_MODES)
@pytest.mark.parametrize("splits", [[6], [3, 3], [1, 2, 3], [1, 1, 1, 1, 1, 1]])
def test_loss_and_grad_independent_of_split(mode, splits):
    logp, old, adv, mask = _batch()
    cfg = LossConfig(agg_mode=mode, entropy_coef=0.0)
    denominator = global_denominator(mask, mode)
    whole_param = logp.clone().requires_grad_(True)
    whole, _ = actor_loss(cfg, whole_param, old, adv, mask, denominator)
    whole.backward()

    split_param = logp.clone().requires_grad_(True)
    total, start = 0.0, 0
    for size in splits:
        piece = slice(start, start + size)
        loss, _ = actor_loss(cfg, split_param[piece], old[piece], adv[piece], mask[piece], denominator)
        loss.backward()  # gradients accumulate, as in micro-batching / all-reduce SUM
        total += loss.item()
        start += size
    assert total == pytest.approx(whole.item(), abs=1e-6)
    torch.testing.assert_close(split_param.grad, whole_param.grad)


def test_token_mean_differs_from_seq_mean_on_uneven_lengths():
    """The modes are not aliases: with uneven lengths they weigh tokens differently."""
    values = torch.tensor([[1.0, 1.0, 1.0], [4.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    assert aggregate(values, mask, "token_mean", 4).item() == pytest.approx(7 / 4)
    assert aggregate(values, mask, "seq_mean_token_mean", 2).item() == pytest.approx((1 + 4) / 2)
    assert aggregate(values, mask, "seq_mean_token_sum", 2).item() == pytest.approx((3 + 4) / 2)


def _rank_main(rank: int, world: int, port: int, out: dict):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    logp, old, adv, mask = _batch()
    shard = slice(0, 2) if rank == 0 else slice(2, 6)  # deliberately uneven shards
    local_denominator = torch.tensor(global_denominator(mask[shard], "token_mean"))
    dist.all_reduce(local_denominator)
    param = logp[shard].clone().requires_grad_(True)
    loss, _ = actor_loss(
        LossConfig(agg_mode="token_mean"),
        param,
        old[shard],
        adv[shard],
        mask[shard],
        local_denominator.item(),
    )
    loss.backward()
    whitened = masked_whiten(adv[shard], mask[shard])
    loss_sum = torch.tensor(loss.item())
    dist.all_reduce(loss_sum)
    out[rank] = (loss_sum.item(), param.grad.clone(), whitened)
    dist.destroy_process_group()


def test_two_gloo_ranks_match_one_process():
    """Two real gloo ranks on uneven shards give the single-process loss, gradient and whitening."""
    logp, old, adv, mask = _batch()
    param = logp.clone().requires_grad_(True)
    whole, _ = actor_loss(LossConfig(agg_mode="token_mean"), param, old, adv, mask, float(mask.sum()))
    whole.backward()
    expected_white = masked_whiten(adv, mask)

    with mp.Manager() as manager:
        out = manager.dict()
        mp.spawn(_rank_main, args=(2, free_port("127.0.0.1"), out), nprocs=2, join=True)
        results = dict(out)
    assert results[0][0] == pytest.approx(whole.item(), abs=1e-6)
    torch.testing.assert_close(torch.cat([results[0][1], results[1][1]]), param.grad)
    torch.testing.assert_close(torch.cat([results[0][2], results[1][2]]), expected_white)
