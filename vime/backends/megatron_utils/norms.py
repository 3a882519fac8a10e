"""The layer norms of vime's Megatron models: torch's RMSNorm / LayerNorm, usable with sequence parallelism.

megatron-core's local (non-Transformer-Engine) specs build their norms with ``WrappedTorchNorm``,
which refuses ``sequence_parallel`` and makes its weights in fp32 whatever ``params_dtype`` says. A
norm works token by token, so it runs on a sequence shard as it does on the whole sequence; what
sequence parallelism needs is the gradient of its weights summed over the tensor-parallel group,
since each rank saw only its shard of the tokens. megatron-core's ``finalize_model_grads`` does that
for every parameter marked ``sequence_parallel`` (Transformer Engine's norms mark theirs the same way).
:class:`TorchNorm` marks its parameters and makes them in the model's dtype; :func:`with_torch_norms`
puts it in place of ``WrappedTorchNorm`` throughout a layer or block spec, the block's final norm
included.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import torch


class TorchNorm:
    """Built like megatron-core's norms (``config, hidden_size, eps``); returns a torch module."""

    def __new__(
        cls,
        config: Any,
        hidden_size: int,
        eps: float = 1e-5,
        persist_layer_norm: bool = False,
        zero_centered_gamma: bool = False,
        normalization: str | None = None,
    ) -> torch.nn.Module:
        kind = config.normalization
        if kind not in ("RMSNorm", "LayerNorm"):
            raise ValueError(f"--normalization {kind}: vime's models use RMSNorm or LayerNorm")
        if config.layernorm_zero_centered_gamma or zero_centered_gamma:
            raise ValueError("--apply-layernorm-1p (zero-centred norm weights) is not in vime's norms")
        norm_cls = torch.nn.RMSNorm if kind == "RMSNorm" else torch.nn.LayerNorm
        norm = norm_cls(hidden_size, eps=eps, dtype=config.params_dtype)
        if config.sequence_parallel:
            for param in norm.parameters():
                param.sequence_parallel = True  # finalize_model_grads sums these over tensor parallel
        return norm


def with_torch_norms(spec: Any, config: Any) -> Any:
    """A copy of ``spec`` (a layer ModuleSpec or a TransformerBlockSubmodules) with :class:`TorchNorm`
    wherever megatron-core would build ``WrappedTorchNorm``. A layer spec becomes a block spec so that
    the final norm is one too (megatron-core would pick it from its module-level default)."""
    from megatron.core.transformer.spec_utils import ModuleSpec
    from megatron.core.transformer.transformer_block import (
        TransformerBlockSubmodules,
        get_num_layers_to_build,
    )
    from megatron.core.transformer.transformer_layer import BaseTransformerLayer

    spec = _replaced(copy.deepcopy(spec))
    if (
        isinstance(spec, ModuleSpec)
        and isinstance(spec.module, type)
        and issubclass(spec.module, BaseTransformerLayer)
    ):
        return TransformerBlockSubmodules(
            layer_specs=[spec] * get_num_layers_to_build(config), layer_norm=TorchNorm
        )
    return spec


def _replaced(node: Any) -> Any:
    from megatron.core.transformer.spec_utils import ModuleSpec
    from megatron.core.transformer.torch_norm import WrappedTorchNorm

    if node is WrappedTorchNorm:
        return TorchNorm
    if isinstance(node, list):
        return [_replaced(item) for item in node]
    if isinstance(node, ModuleSpec):
        node.module = _replaced(node.module)
        node.submodules = _replaced(node.submodules)
        return node
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            setattr(node, f.name, _replaced(getattr(node, f.name)))
    return node
