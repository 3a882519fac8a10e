"""Plan named tensors into flat byte buckets of a bounded size; pack and unpack them.

One flat buffer per bucket means one collective (or one file, or one IPC handle) per bucket instead
of one per tensor. The plan (names, dtypes, shapes, offsets) is computed before any tensor is
gathered, so receivers learn the whole layout up front and never wait on per-bucket metadata.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch

_ALIGN = 256  # bytes: every tensor starts on an aligned offset, so unpacked views are aligned


@dataclass(frozen=True)
class TensorMeta:
    name: str
    dtype: torch.dtype
    shape: tuple[int, ...]
    offset: int
    nbytes: int


def _aligned(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


def plan_buckets(
    specs: Iterable[tuple[str, torch.dtype, tuple[int, ...]]],
    bucket_bytes: int,
    first_bucket_bytes: int | None = None,
) -> list[list[TensorMeta]]:
    """Group (name, dtype, shape) specs, in order, into buckets of at most ``bucket_bytes``
    (a tensor larger than that gets a bucket of its own).

    ``first_bucket_bytes`` makes the first bucket smaller, so the first send starts sooner (the
    pipeline pack -> send -> unpack fills faster).
    """
    buckets: list[list[TensorMeta]] = []
    current: list[TensorMeta] = []
    used = 0
    for name, dtype, shape in specs:
        nbytes = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
        limit = first_bucket_bytes if (first_bucket_bytes and not buckets) else bucket_bytes
        if current and used + _aligned(nbytes) > limit:
            buckets.append(current)
            current, used = [], 0
        current.append(TensorMeta(name, dtype, tuple(shape), used, nbytes))
        used += _aligned(nbytes)
    if current:
        buckets.append(current)
    return buckets


def specs_of(tensors: Iterable[tuple[str, torch.Tensor]]) -> list[tuple[str, torch.dtype, tuple[int, ...]]]:
    return [(n, t.dtype, tuple(t.shape)) for n, t in tensors]


def bucket_nbytes(metas: list[TensorMeta]) -> int:
    return metas[-1].offset + _aligned(metas[-1].nbytes)


def view(buffer: torch.Tensor, meta: TensorMeta) -> torch.Tensor:
    """The tensor ``meta`` describes, as a view into a packed uint8 buffer (no copy)."""
    return buffer[meta.offset : meta.offset + meta.nbytes].view(meta.dtype).view(meta.shape)


def pack_into(buffer: torch.Tensor, metas: list[TensorMeta], tensors: list[torch.Tensor]) -> torch.Tensor:
    """Copy ``tensors`` (in plan order) into ``buffer`` (uint8, large enough); returns the used prefix.

    A tensor may have another shape than planned if its element order is the planned tensor's
    (the strided [groups, rows, hidden] q/k/v views of the zero-copy export).
    """
    for meta, t in zip(metas, tensors, strict=True):
        if t.dtype != meta.dtype or t.numel() != torch.Size(meta.shape).numel():
            raise RuntimeError(
                f"{meta.name}: planned {meta.dtype}{list(meta.shape)}, got {t.dtype}{list(t.shape)}"
            )
        dest = view(buffer, meta)
        (dest if dest.shape == t.shape else dest.view(t.shape)).copy_(t)
    return buffer[: bucket_nbytes(metas)]


class CachedPacker:
    """``pack_into`` for an exporter that packs the same plan into the same buffers at every update.

    The destination views of each bucket are made once per buffer; a bucket is then one fused
    multi-tensor copy (``torch._foreach_copy_``) instead of a Python-level view and copy per tensor,
    which is what thousands of expert tensors per update cost (``benchmarks/bench_moe_weight_export.py``).
    """

    def __init__(self) -> None:
        self._dests: dict[tuple[int, int, int], list[torch.Tensor]] = {}

    def pack(
        self, index: int, buffer: torch.Tensor, metas: list[TensorMeta], tensors: list[torch.Tensor]
    ) -> torch.Tensor:
        key = (index, buffer.data_ptr(), buffer.numel())
        dests = self._dests.get(key)
        if dests is None or any(d.shape != t.shape for d, t in zip(dests, tensors, strict=True)):
            pack_into(buffer, metas, tensors)  # checks every tensor against the plan
            self._dests[key] = [view(buffer, m).view(t.shape) for m, t in zip(metas, tensors, strict=True)]
            return buffer[: bucket_nbytes(metas)]
        try:
            torch._foreach_copy_(dests, tensors)
        except (RuntimeError, TypeError):  # mixed devices the fused kernel refuses
            for dest, tensor in zip(dests, tensors, strict=True):
                dest.copy_(tensor)
        return buffer[: bucket_nbytes(metas)]


def unpack(buffer: torch.Tensor, metas: list[TensorMeta]) -> list[tuple[str, torch.Tensor]]:
    return [(m.name, view(buffer, m)) for m in metas]
