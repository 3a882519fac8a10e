"""How the model runs (not what it is): Megatron's parallelism, recompute, attention kernel,
precision and dropout flags, with megatron-core's meaning.

The Megatron backend maps each onto megatron-core's own configuration (``TransformerConfig``,
``DistributedDataParallelConfig``); ``runtime_check`` says which the torch backend honours and
refuses the rest in one line. ``MegatronRuntime`` is the typed view both backends read.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from typing import Any

ATTENTION_BACKENDS = ("auto", "flash", "fused", "unfused", "local")


def add_megatron_runtime_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("parallelism, recompute and kernels (Megatron's flags)")
    g.add_argument(
        "--sequence-parallel",
        action="store_true",
        default=False,
        help="Split activations along the sequence over the tensor-parallel ranks (no-op at TP 1, as in Megatron).",
    )
    g.add_argument(
        "--expert-model-parallel-size",
        type=int,
        default=1,
        help="megatron: experts split over this many ranks.",
    )
    g.add_argument(
        "--expert-tensor-parallel-size",
        type=int,
        default=None,
        help="megatron: tensor-parallel size inside each expert (default: --tensor-model-parallel-size).",
    )
    g.add_argument(
        "--decoder-first-pipeline-num-layers",
        type=int,
        default=None,
        help="megatron: layers on the first pipeline stage (the rest split evenly).",
    )
    g.add_argument(
        "--decoder-last-pipeline-num-layers",
        type=int,
        default=None,
        help="megatron: layers on the last pipeline stage.",
    )
    g.add_argument(
        "--recompute-granularity",
        choices=["full", "selective"],
        default=None,
        help="Recompute activations in the backward pass: whole layers, or only core attention.",
    )
    g.add_argument(
        "--recompute-method",
        choices=["uniform", "block"],
        default=None,
        help="full recompute: uniform = checkpoint groups of --recompute-num-layers layers; "
        "block = checkpoint only the first --recompute-num-layers layers of each stage.",
    )
    g.add_argument(
        "--recompute-num-layers",
        type=int,
        default=None,
        help="Layers per recompute group (see --recompute-method).",
    )
    g.add_argument(
        "--attention-backend",
        choices=ATTENTION_BACKENDS,
        default="auto",
        help="Attention kernel: flash, fused (memory-efficient), unfused (math), local (Megatron's own "
        "unfused attention), auto (PyTorch SDPA picks).",
    )
    g.add_argument(
        "--attention-softmax-in-fp32",
        action="store_true",
        default=False,
        help="Softmax of the attention scores in fp32 (SDPA's kernels always accumulate it in fp32).",
    )
    g.add_argument(
        "--hidden-dropout",
        type=float,
        default=0.0,
        help="Dropout after attention and MLP (Megatron's default is 0.1; vime's 0.0: RL needs the "
        "trainer's log-probs to match the engine's).",
    )
    g.add_argument(
        "--attention-dropout",
        type=float,
        default=0.0,
        help="Dropout on attention probabilities (Megatron's default 0.1; vime's 0.0, as above).",
    )
    g.add_argument(
        "--no-rope-fusion",
        action="store_false",
        dest="apply_rope_fusion",
        default=True,
        help="Unfused RoPE (vime's local layers never fuse it; the flag restates that).",
    )
    g.add_argument(
        "--no-masked-softmax-fusion",
        action="store_false",
        dest="masked_softmax_fusion",
        default=True,
        help="Unfused masked softmax (vime's SDPA attention never uses Megatron's fused one).",
    )
    g.add_argument(
        "--no-gradient-accumulation-fusion",
        action="store_false",
        dest="gradient_accumulation_fusion",
        default=True,
        help="No fused weight-gradient accumulation (needs APEX; vime's layers never fuse it).",
    )
    g.add_argument(
        "--no-check-for-nan-in-loss-and-grad",
        action="store_false",
        dest="check_for_nan_in_loss_and_grad",
        default=True,
        help="megatron: skip the NaN check of the loss and gradients.",
    )
    g.add_argument(
        "--enable-experimental",
        action="store_true",
        default=False,
        help="megatron: enable megatron-core's experimental features.",
    )
    g.add_argument(
        "--log-probs-chunk-size",
        type=int,
        default=-1,
        help="Compute log-probs over this many token positions at a time to bound the logits' memory "
        "(-1: all at once).",
    )
    g.add_argument(
        "--data-pad-size-multiplier",
        type=int,
        default=1,
        help="Pad each micro-batch's length to a multiple of this (slime's default 128 serves packed "
        "context-parallel batches; vime pads to the longest sample of the micro-batch).",
    )


@dataclass(frozen=True)
class MegatronRuntime:
    """The runtime flags as one typed value (built once from ``args``)."""

    tensor_model_parallel_size: int = 1
    pipeline_model_parallel_size: int = 1
    context_parallel_size: int = 1
    sequence_parallel: bool = False
    expert_model_parallel_size: int = 1
    expert_tensor_parallel_size: int | None = None
    decoder_first_pipeline_num_layers: int | None = None
    decoder_last_pipeline_num_layers: int | None = None
    recompute_granularity: str | None = None
    recompute_method: str | None = None
    recompute_num_layers: int | None = None
    attention_backend: str = "auto"
    attention_softmax_in_fp32: bool = False
    hidden_dropout: float = 0.0
    attention_dropout: float = 0.0
    check_for_nan_in_loss_and_grad: bool = True
    enable_experimental: bool = False
    log_probs_chunk_size: int = -1
    data_pad_size_multiplier: int = 1

    @classmethod
    def from_args(cls, args: Any) -> MegatronRuntime:
        defaults = cls()
        return cls(**{f.name: getattr(args, f.name, getattr(defaults, f.name)) for f in fields(cls)})

    @property
    def effective_sequence_parallel(self) -> bool:
        """Megatron turns sequence parallelism off at tensor-parallel size 1 (nothing to split)."""
        return self.sequence_parallel and self.tensor_model_parallel_size > 1


def runtime_problem(rt: MegatronRuntime, backend: str, num_layers: int | None) -> str | None:
    """The one-line refusal for runtime flags this backend cannot honour, or None."""
    if rt.log_probs_chunk_size == 0 or rt.log_probs_chunk_size < -1:
        return f"--log-probs-chunk-size must be -1 (off) or a positive count, got {rt.log_probs_chunk_size}"
    if rt.data_pad_size_multiplier < 1:
        return f"--data-pad-size-multiplier must be >= 1, got {rt.data_pad_size_multiplier}"
    for flag, p in (("--hidden-dropout", rt.hidden_dropout), ("--attention-dropout", rt.attention_dropout)):
        if not 0.0 <= p < 1.0:
            return f"{flag} must be in [0, 1), got {p}"
    if rt.recompute_granularity is None and (rt.recompute_method or rt.recompute_num_layers):
        return "--recompute-method / --recompute-num-layers need --recompute-granularity full"
    if rt.recompute_granularity == "full":
        if rt.recompute_method is None or rt.recompute_num_layers is None:
            return "--recompute-granularity full needs --recompute-method (uniform or block) and --recompute-num-layers"
        if rt.recompute_num_layers < 1:
            return f"--recompute-num-layers must be >= 1, got {rt.recompute_num_layers}"
    if rt.expert_model_parallel_size < 1:
        return f"--expert-model-parallel-size must be >= 1, got {rt.expert_model_parallel_size}"
    if rt.pipeline_model_parallel_size == 1 and (
        rt.decoder_first_pipeline_num_layers is not None or rt.decoder_last_pipeline_num_layers is not None
    ):
        return (
            "--decoder-first/last-pipeline-num-layers need --pipeline-model-parallel-size > 1 "
            "(as in slime); drop them"
        )
    if backend == "torch":
        return _torch_problem(rt, num_layers)
    return None


def _torch_problem(rt: MegatronRuntime, num_layers: int | None) -> str | None:
    """The torch backend runs Hugging Face models with data parallelism only."""
    if rt.expert_model_parallel_size > 1 or (rt.expert_tensor_parallel_size or 1) > 1:
        return "expert parallelism needs --train-backend megatron; the torch backend is data-parallel only"
    if rt.pipeline_model_parallel_size > 1 or rt.decoder_first_pipeline_num_layers is not None:
        return "pipeline stages need --train-backend megatron; the torch backend is data-parallel only"
    if rt.recompute_granularity == "selective":
        return (
            "--recompute-granularity selective (core attention only) needs --train-backend megatron; "
            "the torch backend recomputes whole layers: use --recompute-granularity full"
        )
    partial_block = rt.recompute_method == "block" and (
        num_layers is None or (rt.recompute_num_layers or 0) < num_layers
    )
    if rt.recompute_granularity == "full" and partial_block:
        return (
            f"--recompute-method block --recompute-num-layers {rt.recompute_num_layers} recomputes only "
            "some layers, which needs --train-backend megatron; the torch backend recomputes every "
            "layer (--recompute-method uniform)"
        )
    if rt.log_probs_chunk_size != -1:
        return (
            "--log-probs-chunk-size is implemented in the Megatron backend's vocabulary-parallel log-probs; "
            "the torch backend computes them per micro-batch: drop it, or bound memory with "
            "--use-dynamic-batch-size --max-tokens-per-gpu"
        )
    if rt.data_pad_size_multiplier != 1:
        return (
            "--data-pad-size-multiplier pads Megatron micro-batches (slime aligns packed sequences with it); "
            "the torch backend pads to the longest sample: drop it or use --train-backend megatron"
        )
    if rt.hidden_dropout > 0:
        return (
            "--hidden-dropout > 0 needs --train-backend megatron: Hugging Face's Qwen/Llama layers have "
            "no residual dropout; use 0"
        )
    if rt.attention_backend == "local":
        return "--attention-backend local is Megatron's own attention; the torch backend uses SDPA (auto/flash/fused/unfused)"
    if not rt.check_for_nan_in_loss_and_grad:
        return (
            "--no-check-for-nan-in-loss-and-grad is Megatron's DDP check; the torch backend has none to skip"
        )
    if rt.enable_experimental:
        return "--enable-experimental turns on megatron-core features; the torch backend has none"
    return None
