"""Build a Megatron-core ``GPTModel`` (local, non-TransformerEngine spec) from a ``ModelShape``.

The local spec runs wherever PyTorch runs (no TransformerEngine or Apex needed), which is what lets
the CPU parity tests build the very same module tree that trains on the GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from vime.backends.megatron_utils.hf_config import ModelShape, padded_vocab_size
from vime.backends.megatron_utils.norms import with_torch_norms
from vime.utils.args.megatron_runtime import MegatronRuntime
from vime.utils.args.moe import MoeFlags


@dataclass(frozen=True)
class ParallelSizes:
    """Tensor, pipeline and context parallel sizes; data parallel is whatever remains. Routed experts
    are split over ``ep`` ranks and each expert over ``etp`` (None: ``tp``), carved out of the same ranks."""

    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    etp: int | None = None

    def data_parallel_size(self, world_size: int) -> int:
        model_parallel = self.tp * self.pp * self.cp
        if world_size % model_parallel:
            raise ValueError(
                f"world size {world_size} is not divisible by tp*pp*cp={model_parallel}; "
                "change --tensor-model-parallel-size / --pipeline-model-parallel-size / --context-parallel-size"
            )
        return world_size // model_parallel


def runtime_fields(runtime: MegatronRuntime) -> dict:
    """The ``TransformerConfig`` fields of Megatron's runtime flags (recompute, dropout, kernels)."""
    return {
        "hidden_dropout": runtime.hidden_dropout,
        "attention_dropout": runtime.attention_dropout,
        "recompute_granularity": runtime.recompute_granularity,
        "recompute_method": runtime.recompute_method if runtime.recompute_granularity == "full" else None,
        "recompute_num_layers": runtime.recompute_num_layers
        if runtime.recompute_granularity == "full"
        else None,
        "attention_softmax_in_fp32": runtime.attention_softmax_in_fp32,
        "num_layers_in_first_pipeline_stage": runtime.decoder_first_pipeline_num_layers,
        "num_layers_in_last_pipeline_stage": runtime.decoder_last_pipeline_num_layers,
        "sequence_parallel": runtime.effective_sequence_parallel,
    }


@dataclass(frozen=True)
class BuildOptions:
    """How the model is built beyond its shape: Megatron's --spec, vocabulary padding, position table."""

    spec: tuple[str, str] | None = None
    spec_args: Any = None  # the namespace a --spec function receives (slime's signature)
    vocab_divisible_by: int = 128
    max_position_embeddings: int | None = None
    moe: MoeFlags = field(default_factory=MoeFlags)  # how megatron-core runs the experts (moe_config)


def transformer_config(
    shape: ModelShape,
    sizes: ParallelSizes,
    dtype: torch.dtype,
    *,
    use_cpu_init: bool,
    runtime: MegatronRuntime | None = None,
    moe: MoeFlags | None = None,
):
    """The ``TransformerConfig`` that reproduces the HF architecture with Megatron's local modules,
    run as Megatron's runtime flags say (``runtime``; defaults: no recompute, no dropout, SDPA) and,
    for an MoE model, its MoE flags (``moe``)."""
    from megatron.core.transformer.transformer_config import TransformerConfig

    from vime.backends.megatron_utils.moe_config import bind_router_gemm_without_te, moe_transformer_kwargs

    if shape.moe is not None:
        bind_router_gemm_without_te()  # whatever layer spec builds the experts
    if sizes.cp > 1:
        raise ValueError(
            "--context-parallel-size > 1 needs TransformerEngine attention, which this install lacks; use 1"
        )
    if runtime is None:
        runtime = MegatronRuntime(tensor_model_parallel_size=sizes.tp, pipeline_model_parallel_size=sizes.pp)
    return TransformerConfig(
        num_layers=shape.num_layers,
        hidden_size=shape.hidden_size,
        ffn_hidden_size=shape.ffn_hidden_size,
        num_attention_heads=shape.num_attention_heads,
        num_query_groups=shape.num_query_groups,
        kv_channels=shape.head_dim,
        normalization="RMSNorm",
        layernorm_epsilon=shape.rms_norm_eps,
        gated_linear_unit=True,
        activation_func=F.silu,
        add_bias_linear=False,
        add_qkv_bias=shape.qkv_bias,
        qk_layernorm=shape.qk_layernorm,
        tensor_model_parallel_size=sizes.tp,
        pipeline_model_parallel_size=sizes.pp,
        context_parallel_size=sizes.cp,
        params_dtype=dtype,
        bf16=dtype == torch.bfloat16,
        fp16=dtype == torch.float16,
        pipeline_dtype=dtype,
        use_cpu_initialization=use_cpu_init,
        # fusions that need Apex / TransformerEngine / custom kernels stay off
        gradient_accumulation_fusion=False,
        bias_activation_fusion=False,
        bias_dropout_fusion=False,
        masked_softmax_fusion=False,
        persist_layer_norm=False,
        apply_rope_fusion=False,
        # vime's loss already divides by the global denominator: no per-micro-batch averaging,
        # gradients summed across data parallel (see optimizer.finalize_grads_summed)
        calculate_per_token_loss=True,
        # micro-batches of dynamic batching differ in length: pipeline stages exchange their shapes
        variable_seq_lengths=sizes.pp > 1,
        **runtime_fields(runtime),
        **(moe_transformer_kwargs(shape.moe, moe or MoeFlags(), sizes.ep, sizes.etp) if shape.moe else {}),
    )


def layer_spec(shape: ModelShape, attention_backend: str = "auto"):
    """Megatron's local layer spec; SDPA core attention swapped in unless ``--attention-backend
    local`` asks for Megatron's own (unfused) attention."""
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec

    spec = get_gpt_layer_local_spec(qk_layernorm=shape.qk_layernorm, normalization="RMSNorm")
    attention = layer_spec_attention(attention_backend)
    if attention is not None:
        spec.submodules.self_attention.submodules.core_attention = attention
    return spec


def moe_layer_specs(config, attention_backend: str = "auto"):
    """An MoE model's decoder block: a dense or an MoE layer spec per layer (``moe_layer_freq``), each
    with the core attention of :func:`layer_spec`."""
    from vime.backends.megatron_utils.moe_config import moe_block_spec

    return moe_block_spec(config, layer_spec_attention(attention_backend))


def layer_spec_attention(attention_backend: str):
    """The core attention :func:`layer_spec` puts in (None: Megatron's own, for ``local``)."""
    from megatron.core.transformer.spec_utils import ModuleSpec

    from vime.backends.megatron_utils.sdpa_attention import SDPACoreAttention

    if attention_backend == "local":
        return None
    return ModuleSpec(module=SDPACoreAttention, params={"kernel": attention_backend})


def spec_from_flag(spec: tuple[str, str], spec_args: Any, config):
    """``--spec MODULE NAME`` as slime reads it: the named spec, or ``fn(args, config, vp_stage)``'s."""
    import inspect

    from megatron.core.transformer.spec_utils import import_module

    try:
        found = import_module(list(spec))
    except (ImportError, AttributeError) as exc:
        raise ValueError(
            f"--spec {' '.join(spec)}: cannot import it ({exc}); put its module on PYTHONPATH"
        ) from None
    if not callable(found):
        return found
    result = found(spec_args, config, None)
    if callable(result) and "pre_process" in inspect.signature(result).parameters:
        raise ValueError(
            f"--spec {' '.join(spec)} returns a model provider (a whole custom model, e.g. a VLM); vime builds "
            "GPT models from a layer spec only"
        )
    return result


def build_gpt_model(
    shape: ModelShape,
    sizes: ParallelSizes,
    *,
    dtype: torch.dtype = torch.bfloat16,
    use_cpu_init: bool = False,
    pre_process: bool | None = None,
    post_process: bool | None = None,
    runtime: MegatronRuntime | None = None,
    build: BuildOptions | None = None,
):
    """One pipeline stage of the model (the whole model when pp == 1). Needs parallel_state set up."""
    from megatron.core import parallel_state
    from megatron.core.models.gpt import GPTModel

    build = build or BuildOptions()
    if pre_process is None:
        pre_process = parallel_state.is_pipeline_first_stage()
    if post_process is None:
        post_process = parallel_state.is_pipeline_last_stage()
    config = transformer_config(
        shape, sizes, dtype, use_cpu_init=use_cpu_init, runtime=runtime, moe=build.moe
    )
    attention = runtime.attention_backend if runtime is not None else "auto"
    if build.spec is not None:
        spec = spec_from_flag(build.spec, build.spec_args, config)
    elif shape.moe is not None:
        spec = moe_layer_specs(config, attention)
    else:
        spec = layer_spec(shape, attention)
    spec = with_torch_norms(spec, config)  # in the model's dtype, and usable with --sequence-parallel
    model = GPTModel(
        config=config,
        transformer_layer_spec=spec,
        vocab_size=padded_vocab_size(shape.vocab_size, sizes.tp, build.vocab_divisible_by),
        max_sequence_length=build.max_position_embeddings or shape.max_position_embeddings,
        pre_process=pre_process,
        post_process=post_process,
        parallel_output=True,
        share_embeddings_and_output_weights=shape.tie_word_embeddings,
        position_embedding_type="rope",
        rotary_base=int(shape.rope_theta),
        rope_scaling=shape.rope_scaling_factor is not None,
        rope_scaling_factor=shape.rope_scaling_factor or 8.0,
        rotary_percent=shape.rotary_percent,
    )
    norms_in_dtype(model, dtype)
    return model


def norms_in_dtype(model: torch.nn.Module, dtype: torch.dtype) -> int:
    """The local spec's torch norms are made in fp32 whatever ``params_dtype`` says: cast them to the
    training dtype, as Megatron-LM's Float16Module casts the whole model. In fp32 beside bf16
    activations they cannot use the fused kernel, and the distributed optimizer keeps their shards
    as views, which megatron-core's CPU-offload optimizer refuses ("can't optimize a non-leaf Tensor").
    Returns how many norms were cast."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.RMSNorm | torch.nn.LayerNorm)]
    for norm in norms:
        norm.to(dtype)
    return len(norms)
