"""Per-tensor digests of a served model's weights, and zeroing them (``--check-weight-update-equal``).

Runs inside the vLLM worker (the worker extension calls it), so it stays light: torch and hashlib.

vLLM's own ``/weight_checker`` digests ``named_parameters``. That covers a model on a GPU, but the CPU
backend moves each linear layer's weight into a packed kernel handle after loading and leaves an
empty parameter behind: the digest would skip every projection. Here such a layer is read back
through its own kernel instead: the identity matrix in gives the weight (transposed) out, exactly
what the layer computes with. Zeroing swaps the kernel for one that answers zeros, so a later load
that misses the layer leaves it visibly zero.
"""

from __future__ import annotations

import hashlib

import torch
from torch import nn


def _digest(tensor: torch.Tensor) -> str:
    data = tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy()
    return hashlib.sha256(data).hexdigest()


def _packed_linears(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """Layers whose weight lives in a CPU kernel handle (``cpu_linear``) and not in the parameter."""
    return [
        (name, module)
        for name, module in model.named_modules()
        if callable(getattr(module, "cpu_linear", None))
        and isinstance(getattr(module, "weight", None), torch.Tensor)
        and module.weight.numel() == 0
    ]


def _input_size(module: nn.Module) -> int:
    return int(getattr(module, "input_size_per_partition", None) or module.input_size)


def _output_size(module: nn.Module) -> int:
    return int(getattr(module, "output_size_per_partition", None) or module.output_size)


@torch.no_grad()
def weight_digests(model: nn.Module) -> dict[str, str]:
    """sha256 of every weight the model computes with, by parameter name."""
    digests = {name: _digest(p) for name, p in model.named_parameters() if p.numel()}
    for name, module in _packed_linears(model):
        probe = torch.eye(_input_size(module), dtype=module.weight.dtype, device=module.weight.device)
        digests[f"{name}.weight"] = _digest(module.cpu_linear(probe, module.weight, None))
    return digests


def _zeros_linear(output_size: int):
    def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        return x.new_zeros(*x.shape[:-1], output_size)

    return linear


@torch.no_grad()
def zero_weights(model: nn.Module) -> int:
    """Zero every weight (packed linear layers answer zeros until they are loaded again); returns how many."""
    count = 0
    for _, p in model.named_parameters():
        if p.numel():
            p.data.zero_()
            count += 1
    for _, module in _packed_linears(model):
        module.cpu_linear = _zeros_linear(_output_size(module))
        count += 1
    return count
