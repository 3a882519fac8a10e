"""Wrap the model in Megatron's DDP and build Megatron's (distributed) Adam optimizer.

Gradients are SUMMED across data-parallel ranks (not averaged): vime's losses already divide by the
global denominator of the whole step (vime.algorithms.aggregation), so a sum gives the same gradient
however the batch is split.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class OptimizerSettings:
    lr: float = 1e-6
    min_lr: float = 0.0
    weight_decay: float = 0.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.98
    adam_eps: float = 1e-8
    clip_grad: float = 1.0
    use_distributed_optimizer: bool = True
    grad_bucket_size: int | None = None  # elements per DDP gradient bucket (None: Megatron's default)


def wrap_ddp(model: torch.nn.Module, settings: OptimizerSettings):
    """Megatron DDP: contiguous fp32 grad buffers, gradient sum across data parallel at the end of the step."""
    from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig

    ddp_config = DistributedDataParallelConfig(
        grad_reduce_in_fp32=True,
        overlap_grad_reduce=False,
        use_distributed_optimizer=settings.use_distributed_optimizer,
        bucket_size=settings.grad_bucket_size,
        average_in_collective=False,
    )
    return DistributedDataParallel(config=model.config, ddp_config=ddp_config, module=model)


def build_megatron_optimizer(ddp_model, settings: OptimizerSettings, dtype: torch.dtype):
    """Adam with fp32 main weights; its state is sharded across data parallel when distributed."""
    from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer

    config = OptimizerConfig(
        optimizer="adam",
        lr=settings.lr,
        min_lr=settings.min_lr,
        weight_decay=settings.weight_decay,
        adam_beta1=settings.adam_beta1,
        adam_beta2=settings.adam_beta2,
        adam_eps=settings.adam_eps,
        clip_grad=settings.clip_grad,
        bf16=dtype == torch.bfloat16,
        fp16=dtype == torch.float16,
        params_dtype=dtype,
        use_distributed_optimizer=settings.use_distributed_optimizer,
    )
    return get_megatron_optimizer(config, [ddp_model])


def finalize_grads_summed(model_chunks, num_tokens=None, *args, **kwargs) -> None:
    """Megatron's gradient finalisation (DP reduce, tied-embedding sync) without its per-token rescale.

    Megatron would divide by the token count when ``calculate_per_token_loss`` is set; vime's loss
    already carries the global denominator, so the count is dropped here.
    """
    from megatron.core.distributed.finalize_model_grads import finalize_model_grads

    finalize_model_grads(model_chunks, None)
