"""Set up torch.distributed and Megatron's tensor / pipeline / context / expert / data parallel groups."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

from vime.backends.megatron_utils.model_builder import ParallelSizes


def init_megatron_parallel(sizes: ParallelSizes, seed: int = 1234) -> int:
    """Join the process group (env:// from torchrun or Ray), build Megatron's groups; returns the DP size.

    On a GPU machine each process takes the GPU of its LOCAL_RANK. Calling it again is a no-op.
    """
    from megatron.core import parallel_state, tensor_parallel

    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    if not dist.is_initialized():
        dist.init_process_group("nccl" if cuda else "gloo")
    world = dist.get_world_size()
    dp = sizes.data_parallel_size(world)
    if not parallel_state.model_parallel_is_initialized():
        parallel_state.initialize_model_parallel(
            tensor_model_parallel_size=sizes.tp,
            pipeline_model_parallel_size=sizes.pp,
            context_parallel_size=sizes.cp,
            expert_model_parallel_size=sizes.ep,
            expert_tensor_parallel_size=sizes.etp,
        )
        if cuda:
            tensor_parallel.model_parallel_cuda_manual_seed(seed)
    return dp


def destroy_megatron_parallel() -> None:
    """Tear down Megatron's groups and the default process group (tests and benchmarks end with this)."""
    from megatron.core import parallel_state

    parallel_state.destroy_model_parallel()
    if dist.is_initialized():
        dist.destroy_process_group()
