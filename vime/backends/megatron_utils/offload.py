"""Offload the actor's GPU state to one page-locked host region between steps, and bring it back.

Used when trainer and engines share GPUs (--colocate): while the engines generate, the trainer's
memory is freed. Each GPU storage the actor owns gets a slice of one host region; offload copies
it there and shrinks the storage to zero bytes, onload grows it back and copies the bytes in.
Views into a storage (Megatron's parameters are views into DDP's contiguous buffers) stay valid,
so nothing is rebuilt.

Why one region: pinning host memory is what makes an offload slow the first time (measured on the
lent H200: about 1.4 GiB/s through torch's pinned allocator, which also rounds each buffer up to a
power of two and keeps it cached: 87 GiB pinned for 68 GiB of state). The region is allocated once,
exactly sized, with room for the optimizer state Adam creates at its first step, and reused every
step. Gradient buffers are not copied at all: every training step zeroes them before use.

The bookkeeping (which storages, where in the region, growth) is device-agnostic and tested on the
CPU; the CUDA-only parts are :func:`pinned_region` and the two copy functions.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import torch

logger = logging.getLogger(__name__)

ALIGN = 4096  # each storage's slice starts on a page: full-speed DMA, and a few MB at most in all
_STATE_SLOTS = {"exp_avg": 1, "exp_avg_sq": 1, "max_exp_avg_sq": 1, "momentum_buffer": 1}


def _round_up(n: int, multiple: int = ALIGN) -> int:
    return -(-n // multiple) * multiple


# ---- what the actor owns on the device ---------------------------------------------------------
@dataclass
class ActorStorages:
    """The actor's device storages, deduplicated: ``keep`` are copied out, ``drop`` only freed."""

    keep: list[torch.UntypedStorage]
    drop: list[torch.UntypedStorage]
    pending_bytes: int = 0  # optimizer state that does not exist yet (created by the first step)


def _optimizer_parts(optimizer) -> list:
    """Megatron's optimizer (chained or not) as its inner optimizers; a torch optimizer as itself."""
    if optimizer is None:
        return []
    return list(getattr(optimizer, "chained_optimizers", [optimizer]))


def _torch_optimizer(part) -> torch.optim.Optimizer | None:
    inner = getattr(part, "optimizer", part)
    return inner if isinstance(inner, torch.optim.Optimizer) else None


def state_slots(group: dict) -> int:
    """Per-parameter state tensors the size of the parameter that this param group's optimizer
    creates at its first step: Adam/AdamW 2 (3 with amsgrad), SGD with momentum 1, else 0."""
    if "betas" in group:
        return 3 if group.get("amsgrad") else 2
    return 1 if group.get("momentum") else 0


def _on(device_type: str, t: torch.Tensor) -> bool:
    return t.device.type == device_type


def actor_storages(actor, device_type: str = "cuda") -> ActorStorages:
    """Every ``device_type`` storage of ``actor`` (weights, DDP buffers, fp32 main params, optimizer
    state), each once; DDP's gradient buffers go to ``drop``. ``pending_bytes``: state the optimizer
    will create at its first step for parameters that have none yet."""
    model = actor.model
    keep: list[torch.Tensor] = []
    grads: list[torch.Tensor] = []
    for name in ("buffers", "expert_parallel_buffers"):  # DDP's lists (a bare module's .buffers is a method)
        group = getattr(model, name, None)
        for buf in group if isinstance(group, list) else []:
            if getattr(buf, "param_data", None) is not None:
                keep.append(buf.param_data)
            if getattr(buf, "grad_data", None) is not None:
                grads.append(buf.grad_data)
    keep += list(model.parameters())
    pending = 0
    for part in _optimizer_parts(actor.optimizer):
        for group in getattr(part, "shard_fp32_from_float16_groups", []):
            keep += list(group)
        opt = _torch_optimizer(part)
        if opt is None:
            continue
        for state in opt.state.values():
            keep += [v for v in state.values() if torch.is_tensor(v)]
        for group in opt.param_groups:
            slots = state_slots(group)
            for p in group["params"]:
                if _on(device_type, p) and not opt.state.get(p):  # (+ a page for a step counter there)
                    pending += slots * _round_up(p.numel() * p.element_size()) + ALIGN
    seen: dict[int, torch.UntypedStorage] = {}
    kept: list[torch.UntypedStorage] = []
    for t in keep:
        storage = t.untyped_storage()
        if _on(device_type, t) and storage.nbytes() and storage.data_ptr() not in seen:
            seen[storage.data_ptr()] = storage
            kept.append(storage)
    dropped: list[torch.UntypedStorage] = []
    for t in grads:
        storage = t.untyped_storage()
        if _on(device_type, t) and storage.nbytes() and storage.data_ptr() not in seen:
            seen[storage.data_ptr()] = storage
            dropped.append(storage)
    return ActorStorages(kept, dropped, pending)


def layout(sizes: list[int]) -> tuple[list[int], int]:
    """Offsets of consecutive page-aligned slices of ``sizes`` bytes, and the bytes they span."""
    offsets, end = [], 0
    for n in sizes:
        offsets.append(end)
        end += _round_up(n)
    return offsets, end


# ---- the host region ---------------------------------------------------------------------------
@dataclass
class Region:
    """A host buffer and how to give it back (``release`` unpins; the memory goes with the last view)."""

    data: torch.Tensor  # uint8, contiguous
    release: Callable[[], None] = lambda: None
    seconds: float = 0.0  # what allocating (and pinning) it took


def plain_region(nbytes: int) -> Region:
    """Pageable host memory: the CPU path (and the tests' stand-in for pinned memory)."""
    started = time.perf_counter()
    data = torch.empty(nbytes, dtype=torch.uint8)
    return Region(data, seconds=time.perf_counter() - started)


def _touch(data: torch.Tensor, threads: int) -> None:
    """Fault every page in, in parallel (torch ops drop the GIL): the driver then only locks them."""
    step = _round_up(-(-data.numel() // threads), 1 << 21)
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda a: data[a : a + step].zero_(), range(0, data.numel(), step)))


def pinned_region(nbytes: int) -> Region:
    """CUDA only: ``nbytes`` of anonymous memory (transparent huge pages where the kernel allows),
    faulted in by several threads, then page-locked once with ``cudaHostRegister``. Exactly sized,
    unlike torch's pinned allocator, which rounds each allocation up to a power of two."""
    started = time.perf_counter()
    buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    with contextlib.suppress(AttributeError, OSError):  # a kernel without transparent huge pages
        buf.madvise(mmap.MADV_HUGEPAGE)
    data = torch.frombuffer(buf, dtype=torch.uint8)
    _touch(data, min(16, os.cpu_count() or 1))
    cudart = torch.cuda.cudart()
    err = cudart.cudaHostRegister(data.data_ptr(), nbytes, 0)
    if err != cudart.cudaError.success:
        raise RuntimeError(f"cudaHostRegister of {nbytes / 2**30:.1f} GiB failed: {err}")
    ptr = data.data_ptr()
    return Region(data, lambda: cudart.cudaHostUnregister(ptr), time.perf_counter() - started)


# ---- copies: device storage <-> host slice -----------------------------------------------------
def _bytes_of(storage: torch.UntypedStorage) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)


def copy_out(host: torch.Tensor, storage: torch.UntypedStorage) -> None:
    host.copy_(_bytes_of(storage), non_blocking=True)


def copy_in(storage: torch.UntypedStorage, host: torch.Tensor) -> None:
    _bytes_of(storage).copy_(host, non_blocking=True)


def _synchronize(device_type: str) -> None:
    if device_type == "cuda":
        torch.cuda.synchronize()


@dataclass
class OffloadStats:
    copied_bytes: int = 0  # device -> host this time
    dropped_bytes: int = 0  # freed without a copy (gradient buffers)
    region_bytes: int = 0  # the host region's size (what stays allocated / pinned)
    region_alloc_s: float = 0.0  # allocating the region this time (0 when it was reused)
    copy_s: float = 0.0

    @property
    def freed_bytes(self) -> int:
        return self.copied_bytes + self.dropped_bytes


@dataclass
class HostOffloader:
    """One actor's offload state: the region (kept across steps) and what is out right now."""

    device_type: str = "cuda"
    make_region: Callable[[int], Region] = pinned_region
    region: Region | None = None
    out: list[tuple[torch.UntypedStorage, int, int]] = field(default_factory=list)  # storage, offset, bytes
    dropped: list[tuple[torch.UntypedStorage, int]] = field(default_factory=list)
    allocations: int = 0  # regions allocated so far (1 in a healthy run)

    @property
    def is_out(self) -> bool:
        return bool(self.out or self.dropped)

    @property
    def region_bytes(self) -> int:
        return self.region.data.numel() if self.region is not None else 0

    def _ensure_region(self, nbytes: int) -> float:
        if self.region_bytes >= nbytes:
            return 0.0
        if self.region is not None:
            logger.warning(
                "the trainer's state outgrew its host region (%.1f -> %.1f MiB): allocating it again",
                self.region.data.numel() / 2**20,
                nbytes / 2**20,
            )
            self.region.release()
            self.region = None
        self.region = self.make_region(nbytes)
        self.allocations += 1
        return self.region.seconds

    def offload(self, storages: ActorStorages) -> OffloadStats:
        """Copy ``storages.keep`` into the region, then free every storage (keep and drop)."""
        if self.is_out:
            return OffloadStats(region_bytes=self.region_bytes)
        sizes = [s.nbytes() for s in storages.keep]
        drop_sizes = [s.nbytes() for s in storages.drop]
        offsets, used = layout(sizes)
        stats = OffloadStats(region_alloc_s=self._ensure_region(used + storages.pending_bytes))
        started = time.perf_counter()
        _synchronize(self.device_type)  # the storages' last writers are done
        for storage, offset, n in zip(storages.keep, offsets, sizes, strict=True):
            copy_out(self.region.data[offset : offset + n], storage)
        _synchronize(self.device_type)
        for storage in storages.keep + storages.drop:
            storage.resize_(0)
        self.out = list(zip(storages.keep, offsets, sizes, strict=True))
        self.dropped = list(zip(storages.drop, drop_sizes, strict=True))
        stats.copied_bytes = sum(sizes)
        stats.dropped_bytes = sum(drop_sizes)
        stats.region_bytes = self.region_bytes
        stats.copy_s = time.perf_counter() - started
        return stats

    def onload(self) -> float:
        """Grow every storage back and copy its bytes in (dropped ones come back zeroed); seconds."""
        if not self.is_out:
            return 0.0
        started = time.perf_counter()
        for storage, offset, n in self.out:
            storage.resize_(n)
            copy_in(storage, self.region.data[offset : offset + n])
        for storage, n in self.dropped:
            storage.resize_(n)
            _bytes_of(storage).zero_()
        _synchronize(self.device_type)
        self.out, self.dropped = [], []
        return time.perf_counter() - started

    def close(self) -> None:
        if self.region is not None and not self.is_out:
            self.region.release()
            self.region = None


def offload_metrics(stats: list[OffloadStats]) -> dict[str, float]:
    """One step record's view of the offloads of this rank's actors (policy, reference)."""
    gib = 2**30
    out = {
        "offload/copied_gib": sum(s.copied_bytes for s in stats) / gib,
        "offload/dropped_gib": sum(s.dropped_bytes for s in stats) / gib,
        "offload/host_region_gib": sum(s.region_bytes for s in stats) / gib,
        "offload/region_alloc_s": sum(s.region_alloc_s for s in stats),
        "offload/copy_s": sum(s.copy_s for s in stats),
    }
    if torch.cuda.is_available():  # whatever else this process pinned through torch's allocator
        stats_now = torch.cuda.host_memory_stats()
        out["offload/torch_pinned_gib"] = stats_now.get("allocated_bytes.current", 0) / gib
    return out
