"""The trainer's offload through one host region: bookkeeping on the CPU, the actor's state round trip.

The GPU-only parts (``pinned_region``: mmap + cudaHostRegister; the copies being asynchronous DMA)
cannot run here. The CPU stands in for the device: CPU storages are freed and regrown the same way
(``resize_``), a plain host tensor stands in for the pinned region, and everything else is the code
that runs on the GPU.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

from vime.backends.megatron_utils.offload import (
    ALIGN,
    ActorStorages,
    HostOffloader,
    Region,
    actor_storages,
    layout,
    plain_region,
    state_slots,
)


def _counting_region():
    made: list[int] = []

    def make(nbytes: int) -> Region:
        made.append(nbytes)
        return plain_region(nbytes)

    return made, make


def test_layout_is_page_aligned_and_packed() -> None:
    offsets, end = layout([10, ALIGN, ALIGN + 1, 0, 3])
    assert offsets == [0, ALIGN, 2 * ALIGN, 4 * ALIGN, 4 * ALIGN]
    assert end == 5 * ALIGN


def test_state_slots_follow_the_optimizer() -> None:
    assert state_slots({"betas": (0.9, 0.99)}) == 2
    assert state_slots({"betas": (0.9, 0.99), "amsgrad": True}) == 3
    assert state_slots({"momentum": 0.9}) == 1
    assert state_slots({"momentum": 0}) == 0


def test_offload_frees_views_survive_and_the_region_is_reused(caplog) -> None:
    """A flat buffer with views (DDP's layout), a separate tensor, a gradient buffer: offload frees all
    three, onload brings the bytes back under the same views, gradients zeroed; later steps reuse the
    one region; state beyond what was reserved makes it grow once (and says so)."""
    flat = torch.arange(1000, dtype=torch.float32)
    views = [flat[:300].view(10, 30), flat[300:]]
    other = torch.randn(77, dtype=torch.float64)
    grads = torch.full((500,), 3.0)
    expect = [views[0].clone(), views[1].clone(), other.clone()]
    made, make = _counting_region()
    off = HostOffloader("cpu", make)
    storages = lambda: ActorStorages(  # noqa: E731
        [flat.untyped_storage(), other.untyped_storage()], [grads.untyped_storage()], pending_bytes=8192
    )

    for step in range(3):
        stats = off.offload(storages())
        assert flat.untyped_storage().nbytes() == other.untyped_storage().nbytes() == 0
        assert grads.untyped_storage().nbytes() == 0
        assert stats.copied_bytes == 4000 + 77 * 8 and stats.dropped_bytes == 2000
        assert off.offload(storages()).copied_bytes == 0  # already out: nothing happens
        views[1].untyped_storage()  # a view's storage is the same (empty) object
        assert off.onload() > 0
        for got, want in zip([views[0], views[1], other], expect, strict=True):
            assert torch.equal(got, want)
        assert torch.equal(grads, torch.zeros(500))
        grads.fill_(float(step))
    assert made == [layout([4000, 77 * 8])[1] + 8192]  # one region, sized once with the reserve
    assert off.allocations == 1

    extra = torch.ones(3 * ALIGN, dtype=torch.uint8)  # more state than the reserve covers
    with caplog.at_level(logging.WARNING):
        off.offload(
            ActorStorages([flat.untyped_storage(), other.untyped_storage(), extra.untyped_storage()], [])
        )
    assert "outgrew its host region" in caplog.text
    off.onload()
    assert off.allocations == 2 and torch.equal(extra, torch.ones(3 * ALIGN, dtype=torch.uint8))


# ---- the Megatron actor's own state on the CPU ------------------------------------------------
pytest.importorskip("megatron.core")

from megatron_cpu_support import megatron_on_cpu  # noqa: E402


@pytest.fixture(scope="module")
def megatron_cpu():
    yield from megatron_on_cpu()


def _backend(model_dir: Path):
    from vime.backends.megatron_utils.backend import MegatronTrainBackend
    from vime.backends.torch_utils.model import make_optimizer
    from vime.utils.arguments import parse_args

    args = parse_args(
        [
            "--debug-train-only", "--hf-checkpoint", str(model_dir), "--rollout-batch-size", "2",
            "--n-samples-per-prompt", "2", "--num-rollout", "4", "--micro-batch-size", "2",
            "--lr", "1e-2", "--use-kl-loss", "--kl-loss-coef", "0.1",
        ]
    )  # fmt: skip

    class CpuMegatronBackend(MegatronTrainBackend):
        optimizer_factory = staticmethod(lambda model: make_optimizer(args, model.parameters(), args.lr))

    backend = CpuMegatronBackend(args, 0, 1)
    backend.init()
    return backend


def _data() -> dict:
    from vime.backends.train_data import TrainBatch

    tokens = [[5, 6, 7, 8, 9, 10], [5, 6, 7, 11, 12], [20, 21, 22, 23], [20, 21, 30, 31, 32, 33, 34]]
    lengths = [3, 2, 1, 4]
    return TrainBatch.from_rollout_data(
        {"tokens": tokens, "response_lengths": lengths, "rewards": [1.0, -1.0, 1.0, -1.0]}
    )


def test_actor_state_round_trips_and_the_first_region_holds_adam(megatron_cpu, tiny_model_dir) -> None:
    """Offloaded before its first step (no Adam state yet), the policy reserves room for the state Adam
    makes; after training the region is not allocated again; training through offload/onload gives
    bit-identical weights to a twin that never offloaded. The reference (no optimizer) round-trips."""
    moving, resident = _backend(tiny_model_dir), _backend(tiny_model_dir)
    actor = moving.actor
    before = actor_storages(actor, "cpu")
    params = sum(p.numel() * p.element_size() for p in actor.model.parameters())
    assert before.pending_bytes >= 2 * params  # AdamW: exp_avg and exp_avg_sq per parameter

    for rollout_id in range(2):
        for a in (moving.actor, moving.ref):
            assert a.offload() > 0
            assert all(p.untyped_storage().nbytes() == 0 for p in a.model.parameters())
        for a in (moving.actor, moving.ref):
            a.onload()
        moving.train(rollout_id, _data())
        resident.train(rollout_id, _data())
    assert actor.optimizer.state  # Adam's state exists now, and fit in the first region
    assert actor._offloader.allocations == 1
    used = layout([s.nbytes() for s in actor_storages(actor, "cpu").keep])[1]
    assert used <= actor._offloader.region_bytes <= used + len(list(actor.model.parameters())) * ALIGN
    for (name, p), (_, q) in zip(
        moving.actor.model.named_parameters(), resident.actor.model.named_parameters(), strict=True
    ):
        assert torch.equal(p, q), name


def test_weights_read_while_offloaded_come_back_for_the_read_and_go_out_again(
    megatron_cpu, tiny_model_dir, tmp_path
) -> None:
    """A push or a save while the loop has the trainer offloaded (the bench's pushes after the last
    step; a save on Ctrl-C while the engines generate) reads the real weights, not freed storage, and
    leaves the trainer offloaded as it found it."""
    from safetensors.torch import load_file

    moving, resident = _backend(tiny_model_dir), _backend(tiny_model_dir)
    for backend in (moving, resident):
        backend.train(0, _data())
    moving.actor.offload()
    assert moving.actor.is_offloaded
    got = moving.export_weights(tmp_path / "offloaded")
    assert moving.actor.is_offloaded
    assert all(p.untyped_storage().nbytes() == 0 for p in moving.actor.model.parameters())
    want = resident.export_weights(tmp_path / "resident")
    ours = {k: v for f in sorted(got.glob("*.safetensors")) for k, v in load_file(str(f)).items()}
    theirs = {k: v for f in sorted(want.glob("*.safetensors")) for k, v in load_file(str(f)).items()}
    assert ours.keys() == theirs.keys() and ours
    for name, tensor in ours.items():
        assert torch.equal(tensor, theirs[name]), name
    moving.actor.onload()
    for (name, p), (_, q) in zip(
        moving.actor.model.named_parameters(), resident.actor.model.named_parameters(), strict=True
    ):
        assert torch.equal(p, q), name
