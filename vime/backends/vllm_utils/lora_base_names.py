"""Full-weight names for an engine that serves LoRA: the wrapped layers keep their weights one level down.

With ``--enable-lora`` vLLM wraps each linear and embedding layer it can adapt
(``QKVParallelLinearWithLoRA`` …) after the model loaded, and the layer's own weight moves to
``<layer>.base_layer.weight``. vLLM 0.26's loaders walk the module tree by name, so a full push
into such an engine (the merged push of a LoRA run, or any push of full weights) stops at the first
wrapped layer ("There is no module or parameter named 'embed_tokens.weight'"). vime's worker
extension renames what it loads (the ``ipc`` paths, ``vime_load_ipc`` and ``vime_load_ipc_bucket``);
a push through vLLM's own weight-transfer routes (``nccl``) is loaded by vLLM and not renamed.
Later vLLM releases give the wrapper a ``load_weights`` of its own that forwards to the base layer;
there the names stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from torch import nn

_PARAMETER_LEAVES = ("weight", "bias")
T = TypeVar("T")


def wrapped_layer_names(model: nn.Module) -> frozenset[str]:
    """Last name parts of the layers a LoRA wrapper holds, with the checkpoint names packed into them
    (``qkv_proj`` → ``q_proj``, ``k_proj``, ``v_proj``: the model's ``packed_modules_mapping``)."""
    packed: dict[str, list[str]] = getattr(model, "packed_modules_mapping", None) or {}
    names: set[str] = set()
    for path, module in model.named_modules():
        if "base_layer" in module._modules and path:
            leaf = path.rsplit(".", 1)[-1]
            names.add(leaf)
            names.update(packed.get(leaf, ()))
    return frozenset(names)


def wrapper_loads_itself() -> bool:
    """Whether this vLLM's LoRA wrapper forwards ``load_weights`` to its base layer itself."""
    try:
        from vllm.lora.layers.base import BaseLayerWithLoRA
    except ImportError:  # a vLLM without LoRA layers: nothing is ever wrapped
        return True
    return "load_weights" in vars(BaseLayerWithLoRA)


def base_layer_renamer(model: nn.Module) -> Callable[[str], str] | None:
    """A function that moves a checkpoint name into its wrapped layer's ``base_layer``; None where the
    model has no wrapped layer or this vLLM loads through the wrapper."""
    wrapped = wrapped_layer_names(model)
    if not wrapped or wrapper_loads_itself():
        return None
    return lambda name: into_base_layer(name, wrapped)


def into_base_layer(name: str, wrapped: frozenset[str]) -> str:
    """``model.layers.0.self_attn.q_proj.weight`` → ``model.layers.0.self_attn.q_proj.base_layer.weight``
    where ``q_proj`` is in ``wrapped``; every other name unchanged."""
    parts = name.split(".")
    if len(parts) >= 2 and parts[-1] in _PARAMETER_LEAVES and parts[-2] in wrapped:
        return ".".join([*parts[:-1], "base_layer", parts[-1]])
    return name


def renamed(weights: Iterable[tuple[str, T]], rename: Callable[[str], str] | None) -> list[tuple[str, T]]:
    """``weights`` with ``rename`` applied to each name (unchanged where it is None)."""
    if rename is None:
        return list(weights)
    return [(rename(name), tensor) for name, tensor in weights]
