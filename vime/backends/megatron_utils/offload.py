"""Offload the actor's weights, gradient buffers and optimizer state to the CPU between steps.

Used when trainer and engines share GPUs (--colocate): while the engines generate, the trainer's
memory is freed. Each GPU tensor's storage is copied to pinned host memory and then shrunk to zero
bytes; onload grows it back and copies the bytes in. Views into the storage (Megatron's parameters
are views into DDP's contiguous buffers) stay valid, so nothing has to be rebuilt.
"""

from __future__ import annotations

import torch

_STASH_ATTR = "_vime_offload_stash"


def _gpu_tensors(actor) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []
    model = actor.model
    ddp_buffers = [getattr(model, n, None) for n in ("buffers", "expert_parallel_buffers")]
    for buf in [b for group in ddp_buffers if isinstance(group, list) for b in group]:
        found += [
            t for t in (getattr(buf, "param_data", None), getattr(buf, "grad_data", None)) if t is not None
        ]
    found += list(model.parameters())
    opt = actor.optimizer
    for inner in getattr(opt, "chained_optimizers", [opt]):
        for group in getattr(inner, "shard_fp32_from_float16_groups", []):
            found += list(group)
        torch_opt = getattr(inner, "optimizer", None)
        if torch_opt is not None:
            for state in torch_opt.state.values():
                found += [v for v in state.values() if torch.is_tensor(v)]
    return [t for t in found if t.is_cuda]


def offload_actor(actor) -> int:
    """Move every GPU storage the actor owns to pinned CPU memory; returns the bytes freed."""
    if getattr(actor, _STASH_ATTR, None):
        return 0  # already offloaded
    torch.cuda.synchronize()
    stash: dict[int, tuple[torch.UntypedStorage, torch.Tensor]] = {}
    for t in _gpu_tensors(actor):
        storage = t.untyped_storage()
        key = storage.data_ptr()
        if key in stash or storage.nbytes() == 0:
            continue
        host = torch.empty(storage.nbytes(), dtype=torch.uint8, pin_memory=True)
        host.copy_(torch.tensor([], dtype=torch.uint8, device=t.device).set_(storage), non_blocking=False)
        stash[key] = (storage, host)
    for storage, _host in stash.values():
        storage.resize_(0)
    setattr(actor, _STASH_ATTR, list(stash.values()))
    torch.cuda.empty_cache()
    return sum(h.numel() for _, h in stash.values())


def onload_actor(actor) -> None:
    """Bring back what ``offload_actor`` moved out (same storages, same bytes)."""
    stash = getattr(actor, _STASH_ATTR, None)
    if not stash:
        return
    for storage, host in stash:
        storage.resize_(host.numel())
        torch.tensor([], dtype=torch.uint8, device=storage.device).set_(storage).copy_(
            host, non_blocking=True
        )
    torch.cuda.synchronize()
    setattr(actor, _STASH_ATTR, None)
