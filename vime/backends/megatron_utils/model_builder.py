"""Build a Megatron-core ``GPTModel`` (local, non-TransformerEngine spec) from a ``ModelShape``.

The local spec runs wherever PyTorch runs (no TransformerEngine or Apex needed), which is what lets
the CPU parity tests build the very same module tree that trains on the GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from vime.backends.megatron_utils.hf_config import ModelShape, padded_vocab_size


@dataclass(frozen=True)
class ParallelSizes:
    """Tensor, pipeline and context parallel sizes; data parallel is whatever remains."""

    tp: int = 1
    pp: int = 1
    cp: int = 1

    def data_parallel_size(self, world_size: int) -> int:
        model_parallel = self.tp * self.pp * self.cp
        if world_size % model_parallel:
            raise ValueError(
                f"world size {world_size} is not divisible by tp*pp*cp={model_parallel}; "
                "change --tensor-model-parallel-size / --pipeline-model-parallel-size / --context-parallel-size"
            )
        return world_size // model_parallel


def transformer_config(shape: ModelShape, sizes: ParallelSizes, dtype: torch.dtype, *, use_cpu_init: bool):
    """The ``TransformerConfig`` that reproduces the HF architecture with Megatron's local modules."""
    from megatron.core.transformer.transformer_config import TransformerConfig

    if sizes.cp > 1:
        raise ValueError(
            "--context-parallel-size > 1 needs TransformerEngine attention, which this install lacks; use 1"
        )
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
        hidden_dropout=0.0,
        attention_dropout=0.0,
        tensor_model_parallel_size=sizes.tp,
        pipeline_model_parallel_size=sizes.pp,
        context_parallel_size=sizes.cp,
        sequence_parallel=False,  # torch's RMSNorm (local spec) does not support it
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
        attention_softmax_in_fp32=True,
        # vime's loss already divides by the global denominator: no per-micro-batch averaging,
        # gradients summed across data parallel (see optimizer.finalize_grads_summed)
        calculate_per_token_loss=True,
    )


def layer_spec(shape: ModelShape):
    """Megatron's local layer spec with SDPA core attention swapped in."""
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec

    from vime.backends.megatron_utils.sdpa_attention import SDPACoreAttention

    spec = get_gpt_layer_local_spec(qk_layernorm=shape.qk_layernorm, normalization="RMSNorm")
    spec.submodules.self_attention.submodules.core_attention = SDPACoreAttention
    return spec


def build_gpt_model(
    shape: ModelShape,
    sizes: ParallelSizes,
    *,
    dtype: torch.dtype = torch.bfloat16,
    use_cpu_init: bool = False,
    pre_process: bool | None = None,
    post_process: bool | None = None,
):
    """One pipeline stage of the model (the whole model when pp == 1). Needs parallel_state set up."""
    from megatron.core import parallel_state
    from megatron.core.models.gpt import GPTModel

    if pre_process is None:
        pre_process = parallel_state.is_pipeline_first_stage()
    if post_process is None:
        post_process = parallel_state.is_pipeline_last_stage()
    config = transformer_config(shape, sizes, dtype, use_cpu_init=use_cpu_init)
    model = GPTModel(
        config=config,
        transformer_layer_spec=layer_spec(shape),
        vocab_size=padded_vocab_size(shape.vocab_size, sizes.tp),
        max_sequence_length=shape.max_position_embeddings,
        pre_process=pre_process,
        post_process=post_process,
        parallel_output=True,
        share_embeddings_and_output_weights=shape.tie_word_embeddings,
        position_embedding_type="rope",
        rotary_base=int(shape.rope_theta),
        rope_scaling=shape.rope_scaling_factor is not None,
        rope_scaling_factor=shape.rope_scaling_factor or 8.0,
    )
    return model
