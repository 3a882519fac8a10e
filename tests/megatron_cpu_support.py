"""The CPU stand-ins the Megatron tests need, in one place (imported by tests/test_megatron_*.py).

megatron-core 0.16.1 places tensors on ``torch.cuda.current_device()`` and its checkpoint writer calls
``torch.cuda.synchronize()``: on a machine without CUDA both are patched, for the duration of one test
module only. The library itself never patches anything.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from tests.net_helpers import free_port


def megatron_on_cpu() -> Iterator[None]:
    """Body of a module-scoped fixture: a one-rank gloo group and Megatron's groups, CUDA calls patched."""
    import torch.distributed as dist
    from megatron.core import parallel_state

    mp = pytest.MonkeyPatch()
    mp.setattr(torch.cuda, "current_device", lambda: "cpu")
    mp.setattr(torch.cuda, "synchronize", lambda *args, **kwargs: None)
    created = not dist.is_initialized()
    if created:
        mp.setenv("MASTER_ADDR", "127.0.0.1")
        mp.setenv("MASTER_PORT", str(free_port("127.0.0.1")))
        dist.init_process_group("gloo", rank=0, world_size=1)
    elif dist.get_world_size() != 1:
        mp.undo()
        pytest.skip("another test left a multi-rank process group in this process")
    if parallel_state.model_parallel_is_initialized():
        parallel_state.destroy_model_parallel()
    parallel_state.initialize_model_parallel(1, 1)
    try:
        yield
    finally:
        parallel_state.destroy_model_parallel()
        if created:
            dist.destroy_process_group()
        mp.undo()
