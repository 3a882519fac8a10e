"""Wrap the model in Megatron's DDP and build Megatron's (distributed) Adam optimizer.

Gradients are SUMMED across data-parallel ranks (not averaged): vime's losses already divide by the
global denominator of the whole step (vime.algorithms.aggregation), so a sum gives the same gradient
however the batch is split.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import torch

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class OptimizerSettings:
    """Megatron's optimizer and DDP flags as one typed value (``from_args`` reads them once)."""

    lr: float = 1e-6
    min_lr: float = 0.0
    weight_decay: float = 0.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.98
    adam_eps: float = 1e-8
    clip_grad: float = 1.0
    optimizer: str = "adam"
    sgd_momentum: float = 0.9
    use_distributed_optimizer: bool = True
    grad_bucket_size: int | None = None  # elements per DDP gradient bucket (None: Megatron's default)
    grad_reduce_in_fp32: bool = True  # --accumulate-allreduce-grads-in-fp32
    check_for_nan_in_grad: bool = True
    cpu_offload: bool = False
    offload_fraction: float = 1.0
    overlap_cpu_d2h_h2d: bool = False
    precision_aware: bool = False

    @classmethod
    def from_args(cls, args: Any) -> OptimizerSettings:
        return cls(
            lr=args.lr,
            min_lr=args.min_lr,
            weight_decay=args.weight_decay,
            adam_beta1=args.adam_beta1,
            adam_beta2=args.adam_beta2,
            adam_eps=args.adam_eps,
            clip_grad=args.clip_grad if args.clip_grad > 0 else 1e12,
            optimizer=args.optimizer,
            sgd_momentum=args.sgd_momentum,
            use_distributed_optimizer=args.use_distributed_optimizer,
            grad_reduce_in_fp32=args.accumulate_allreduce_grads_in_fp32,
            check_for_nan_in_grad=args.check_for_nan_in_loss_and_grad,
            cpu_offload=args.optimizer_cpu_offload,
            offload_fraction=args.optimizer_offload_fraction,
            overlap_cpu_d2h_h2d=args.overlap_cpu_optimizer_d2h_h2d,
            precision_aware=args.use_precision_aware_optimizer,
        )


def wrap_ddp(model: torch.nn.Module, settings: OptimizerSettings):
    """Megatron DDP: contiguous grad buffers (fp32 with --accumulate-allreduce-grads-in-fp32, else the
    training dtype), gradient sum across data parallel at the end of the step."""
    from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig

    ddp_config = DistributedDataParallelConfig(
        grad_reduce_in_fp32=settings.grad_reduce_in_fp32,
        overlap_grad_reduce=False,
        use_distributed_optimizer=settings.use_distributed_optimizer,
        bucket_size=settings.grad_bucket_size,
        average_in_collective=False,
        check_for_nan_in_grad=settings.check_for_nan_in_grad,
    )
    return DistributedDataParallel(config=model.config, ddp_config=ddp_config, module=model)


def transformer_engine_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("transformer_engine") is not None


def precision_aware_fallback(settings: OptimizerSettings) -> str | None:
    """Why ``--use-precision-aware-optimizer`` cannot run here, and what runs instead (or None)."""
    if not settings.precision_aware or transformer_engine_available():
        return None
    return (
        "--use-precision-aware-optimizer: Transformer Engine's FusedAdam is not installed; megatron-core's "
        "Adam runs with fp32 main weights and fp32 moments, the update the flag computes with its default "
        "dtypes (same result, without the fused kernel)"
    )


def build_megatron_optimizer(ddp_model, settings: OptimizerSettings, dtype: torch.dtype):
    """Adam (or SGD) with fp32 main weights; its state sharded across data parallel when distributed,
    or held and stepped on the CPU with --optimizer-cpu-offload (megatron-core's hybrid optimizer)."""
    from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer

    fallback = precision_aware_fallback(settings)
    if fallback:
        logger.warning(fallback)
    config = OptimizerConfig(
        optimizer=settings.optimizer,
        lr=settings.lr,
        min_lr=settings.min_lr,
        weight_decay=settings.weight_decay,
        adam_beta1=settings.adam_beta1,
        adam_beta2=settings.adam_beta2,
        adam_eps=settings.adam_eps,
        sgd_momentum=settings.sgd_momentum,
        clip_grad=settings.clip_grad,
        bf16=dtype == torch.bfloat16,
        fp16=dtype == torch.float16,
        params_dtype=dtype,
        use_distributed_optimizer=settings.use_distributed_optimizer,
        use_precision_aware_optimizer=settings.precision_aware and fallback is None,
        optimizer_cpu_offload=settings.cpu_offload,
        optimizer_offload_fraction=settings.offload_fraction if settings.cpu_offload else 0.0,
        overlap_cpu_optimizer_d2h_h2d=settings.overlap_cpu_d2h_h2d,
    )
    return get_megatron_optimizer(config, [ddp_model])


def set_learning_rate(optimizer, lr: float) -> None:
    """Every parameter group's learning rate (the LR schedule, applied before each step)."""
    for group in optimizer.param_groups:
        group["lr"] = lr


def finalize_grads_summed(model_chunks, num_tokens=None, *args, **kwargs) -> None:
    """Megatron's gradient finalisation (DP reduce, tied-embedding sync) without its per-token rescale.

    Megatron would divide by the token count when ``calculate_per_token_loss`` is set; vime's loss
    already carries the global denominator, so the count is dropped here.
    """
    from megatron.core.distributed.finalize_model_grads import finalize_model_grads

    finalize_model_grads(model_chunks, None)
