"""The load-weights recorder behind IPC updates (vime/backends/vllm_utils/copy_plan.py), on the CPU.

The model here has loaders written the way vLLM's are (fused q/k/v shards narrowed out of one
parameter, gate/up stacked, a vocab-padded embedding, the default loader's ``param.data.copy_``):
vLLM's own model classes need an engine context to be built. What is checked is the promise the
GPU path relies on: after recording one load, replaying the plan on new data in the same storages
gives exactly the parameters a real ``load_weights`` of that data gives, and a loader that is not
a plain copy is never replayed.
"""

import pytest
import torch

from vime.backends.vllm_utils.copy_plan import SourceSpec, record_load

HIDDEN, HEADS, KV, HEAD_DIM, FFN, VOCAB, PADDED = 8, 2, 1, 4, 12, 10, 16


class TinyFused(torch.nn.Module):
    """q/k/v fused like vLLM's QKVParallelLinear, gate/up like MergedColumnParallelLinear."""

    def __init__(self, scale_loader: bool = False, rebind_loader: bool = False):
        super().__init__()
        self.qkv = torch.nn.Parameter(torch.zeros((HEADS + 2 * KV) * HEAD_DIM, HIDDEN), requires_grad=False)
        self.gate_up = torch.nn.Parameter(torch.zeros(2 * FFN, HIDDEN), requires_grad=False)
        self.embed = torch.nn.Parameter(torch.full((PADDED, HIDDEN), 7.0), requires_grad=False)
        self.norm = torch.nn.Parameter(torch.zeros(HIDDEN), requires_grad=False)
        self.scale_loader, self.rebind_loader = scale_loader, rebind_loader

    def load_weights(self, weights):
        offsets = {"q": (0, HEADS * HEAD_DIM), "k": (HEADS * HEAD_DIM, KV * HEAD_DIM)}
        offsets["v"] = ((HEADS + KV) * HEAD_DIM, KV * HEAD_DIM)
        for name, w in weights:
            if name in ("q_proj", "k_proj", "v_proj"):
                start, size = offsets[name[0]]
                self.qkv.data.narrow(0, start, size).copy_(w)
            elif name in ("gate_proj", "up_proj"):
                shard = 0 if name == "gate_proj" else FFN
                self.gate_up.data.narrow(0, shard, FFN).copy_(w)
            elif name == "embed":
                self.embed[: w.shape[0]].data.copy_(w)
                self.embed[w.shape[0] :].data.fill_(0)
            elif name == "norm" and self.rebind_loader:
                self.norm.data = w  # aliases the sender's memory instead of copying
            elif name == "norm":
                self.norm.data.copy_(w * 2 if self.scale_loader else w)


SHAPES = {
    "q_proj": (HEADS * HEAD_DIM, HIDDEN),
    "k_proj": (KV * HEAD_DIM, HIDDEN),
    "v_proj": (KV * HEAD_DIM, HIDDEN),
    "gate_proj": (FFN, HIDDEN),
    "up_proj": (FFN, HIDDEN),
    "embed": (VOCAB, HIDDEN),
    "norm": (HIDDEN,),
}


def shared_weights(seed: int, transposed_norm_source: bool = False):
    """All tensors as views of one flat 'shared' buffer (like one IPC storage), plus their specs."""
    gen = torch.Generator().manual_seed(seed)
    total = sum(torch.Size(s).numel() for s in SHAPES.values())
    flat = torch.randn(total, generator=gen)
    storage = flat.untyped_storage()
    specs, offset = [], 0
    for name, shape in SHAPES.items():
        n = torch.Size(shape).numel()
        stride = torch.empty(shape).stride()
        specs.append((name, SourceSpec(0, offset, tuple(shape), stride, torch.float32)))
        offset += n
    return flat, storage, specs


def views(storage, specs):
    return [(name, spec.view([storage], torch.device("cpu"))) for name, spec in specs]


def params(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_replay_equals_a_real_load_of_new_data():
    flat, storage, specs = shared_weights(0)
    model = TinyFused()
    plan = record_load(lambda: model.load_weights(views(storage, specs)), [storage], list(model.parameters()))
    assert plan.replayable and len(plan.targets) == len(SHAPES)
    assert plan.nbytes == sum(torch.Size(s).numel() for s in SHAPES.values()) * 4

    flat_b, _, _ = shared_weights(1)
    flat.copy_(flat_b)  # the trainer writes new weights into the same memory
    plan.replay([storage], torch.device("cpu"))
    replayed = params(model)

    reference = TinyFused()
    reference.load_weights(views(storage, specs))
    for name, tensor in params(reference).items():
        assert torch.equal(replayed[name], tensor), name
    assert torch.all(replayed["embed"][VOCAB:] == 0)  # the loader's padding fill stays done


def test_kept_views_follow_the_memory_and_are_dropped_on_request():
    flat, storage, specs = shared_weights(0)
    model = TinyFused()
    plan = record_load(lambda: model.load_weights(views(storage, specs)), [storage], list(model.parameters()))
    plan.replay([storage], torch.device("cpu"), keep_views=True)
    flat.mul_(3)
    plan.replay([storage], torch.device("cpu"), keep_views=True)  # the same views, new contents
    assert torch.allclose(model.norm, flat[-HIDDEN:])
    plan.forget_views()
    assert plan._views is None


def test_a_loader_that_transforms_the_data_is_not_replayable():
    _, storage, specs = shared_weights(0)
    model = TinyFused(scale_loader=True)
    plan = record_load(lambda: model.load_weights(views(storage, specs)), [storage], list(model.parameters()))
    assert not plan.replayable and "computed" in plan.why_not


def test_a_loader_that_aliases_the_shared_memory_is_refused():
    _, storage, specs = shared_weights(0)
    model = TinyFused(rebind_loader=True)
    with pytest.raises(RuntimeError, match="cannot take IPC updates"):
        record_load(lambda: model.load_weights(views(storage, specs)), [storage], list(model.parameters()))


def test_strided_sources_replay_like_their_load():
    """A transposed view of the shared memory (a loader reading w.t()) is still a copy from it."""
    flat = torch.randn(FFN * HIDDEN)
    storage = flat.untyped_storage()
    spec = SourceSpec(
        0, 0, (HIDDEN, FFN), (1, HIDDEN), torch.float32
    )  # the transpose of a [FFN, HIDDEN] tensor
    target = torch.zeros(HIDDEN, FFN)

    def load():
        target.copy_(spec.view([storage], torch.device("cpu")))

    plan = record_load(load, [storage], [target])
    flat.add_(1)
    plan.replay([storage], torch.device("cpu"))
    assert torch.equal(target, flat.view(FFN, HIDDEN).t())
