"""The mixture-of-experts part of the Megatron model: ``TransformerConfig`` fields and layer specs.

The architecture comes from the checkpoint (``MoeArch``, already checked against the MoE flags);
how megatron-core runs it comes from the runtime flags (``MoeFlags``). Two flags slime's recipes
pass ask for kernels this install lacks and fall back with a warning that names what runs instead:
``--moe-grouped-gemm`` (grouped_gemm / Transformer Engine) and ``--moe-permute-fusion``
(Transformer Engine). Both change speed, not results.
"""

from __future__ import annotations

import importlib.util
import logging
from typing import Any

from vime.utils.args.moe import MoeFlags
from vime.utils.moe_arch import MoeArch

logger = logging.getLogger(__name__)


def fallbacks(flags: MoeFlags) -> list[str]:
    """One warning per requested MoE kernel that this install cannot give, naming what runs instead."""
    out = []
    if flags.moe_grouped_gemm and importlib.util.find_spec("grouped_gemm") is None:
        out.append(
            "--moe-grouped-gemm: neither the grouped_gemm package nor Transformer Engine is installed; "
            "the experts run as megatron-core's SequentialMLP (one GEMM per local expert, same result, slower)"
        )
    if flags.moe_permute_fusion and importlib.util.find_spec("transformer_engine") is None:
        out.append(
            "--moe-permute-fusion: Transformer Engine is not installed; megatron-core's unfused token "
            "permutation runs instead (same result)"
        )
    return out


def moe_transformer_kwargs(
    arch: MoeArch, flags: MoeFlags, expert_parallel: int = 1, expert_tensor_parallel: int | None = None
) -> dict[str, Any]:
    """The ``TransformerConfig`` fields of the experts (megatron-core 0.16.1's names and meaning)."""
    if arch.router_topk == 1 and arch.score_function == "softmax" and not arch.pre_softmax:
        raise ValueError(
            "a top-1 softmax router that renormalises its one weight (HF norm_topk_prob) always weighs its "
            "expert 1.0, which megatron-core refuses (zero router gradient); this checkpoint cannot be trained "
            "by --train-backend megatron"
        )
    types, coeffs = flags.load_balancing, flags.aux_loss_coeffs
    return {
        "num_moe_experts": arch.num_experts,
        "moe_router_topk": arch.router_topk,
        "moe_ffn_hidden_size": arch.ffn_hidden_size,
        "moe_layer_freq": list(arch.layer_pattern),
        "moe_router_score_function": arch.score_function,
        "moe_router_pre_softmax": arch.pre_softmax,
        "moe_router_enable_expert_bias": arch.expert_bias,
        "moe_router_topk_scaling_factor": arch.topk_scaling_factor,
        "moe_shared_expert_intermediate_size": arch.shared_expert_intermediate_size,
        "moe_router_num_groups": arch.num_groups,
        "moe_router_group_topk": arch.group_topk,
        "moe_router_load_balancing_type": types[0] if len(types) == 1 else list(types),
        "moe_aux_loss_coeff": coeffs[0] if len(coeffs) == 1 else list(coeffs),
        "moe_token_dispatcher_type": flags.dispatcher,
        "moe_router_dtype": flags.moe_router_dtype,
        "moe_router_bias_update_rate": flags.bias_update_rate,
        "moe_token_drop_policy": flags.moe_token_drop_policy,
        # the kernels this install lacks (see ``fallbacks``): SequentialMLP and the unfused permutation
        "moe_grouped_gemm": False,
        "moe_permute_fusion": False,
        "expert_model_parallel_size": expert_parallel,
        "expert_tensor_parallel_size": expert_tensor_parallel,
    }


def bind_router_gemm_without_te() -> None:
    """megatron-core 0.16.1's router gating linear tests ``te_general_gemm is not None``, a name its
    module binds only when Transformer Engine imports: without it every MoE forward raises NameError.
    Bind the name to None, the value its own fallback branch checks for (plain torch matmuls)."""
    from megatron.core.transformer.moe import moe_utils

    if not moe_utils.HAVE_TE and not hasattr(moe_utils, "te_general_gemm"):
        moe_utils.te_general_gemm = None


def moe_block_spec(config, core_attention=None):
    """Megatron's local decoder-block spec (a dense or an MoE layer spec per layer, after
    ``moe_layer_freq``) for this pipeline stage, with ``core_attention`` (a module or ModuleSpec;
    None keeps Megatron's) in every layer."""
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_decoder_block_spec

    bind_router_gemm_without_te()
    block = get_gpt_decoder_block_spec(config, use_transformer_engine=False, normalization="RMSNorm")
    if core_attention is not None:
        for spec in {id(s): s for s in block.layer_specs}.values():
            spec.submodules.self_attention.submodules.core_attention = core_attention
    return block


def set_aux_loss_scale(config, micro_batches, dp_group, device) -> None:
    """Make the load-balancing loss the token-weighted mean over this step's micro-batches and
    data-parallel ranks, its meaning in Megatron-LM with ``calculate_per_token_loss``.

    There the router multiplies each micro-batch's auxiliary loss by its token count and
    ``finalize_model_grads`` divides every gradient by the step's tokens. vime's policy loss already
    carries its global denominator, so its finalisation divides nothing (``finalize_grads_summed``):
    the division is applied to the auxiliary loss's gradient alone, through the scale megatron-core
    gives it. Only the no-pipelining loop keeps this scale (the pipeline schedule resets it; such
    launches are refused when the loss is on)."""
    import torch
    import torch.distributed as dist
    from megatron.core.transformer.moe.moe_utils import MoEAuxLossAutoScaler

    if not config.num_moe_experts:
        return
    tokens = torch.tensor(float(sum(m.input_ids.numel() for m in micro_batches)), device=device)
    dist.all_reduce(tokens, group=dp_group)
    MoEAuxLossAutoScaler.set_loss_scale(1.0 / tokens)


def warn_fallbacks(flags: MoeFlags) -> None:
    for line in fallbacks(flags):
        logger.warning(line)
