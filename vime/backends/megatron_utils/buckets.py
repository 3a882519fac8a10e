"""Pack named tensors into flat byte buckets of a bounded size, and unpack them again.

One flat buffer per bucket means one collective (or one file, or one IPC handle) per bucket instead
of one per tensor. The metadata says where each tensor lies in the buffer.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
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
    tensors: Iterable[tuple[str, torch.Tensor]], bucket_bytes: int
) -> Iterator[list[tuple[TensorMeta, torch.Tensor]]]:
    """Group tensors (lazily) into buckets of at most ``bucket_bytes`` (a larger tensor gets its own)."""
    current: list[tuple[TensorMeta, torch.Tensor]] = []
    used = 0
    for name, t in tensors:
        nbytes = t.numel() * t.element_size()
        if current and used + _aligned(nbytes) > bucket_bytes:
            yield current
            current, used = [], 0
        current.append((TensorMeta(name, t.dtype, tuple(t.shape), used, nbytes), t))
        used += _aligned(nbytes)
    if current:
        yield current


def bucket_nbytes(bucket: list[tuple[TensorMeta, torch.Tensor]]) -> int:
    last = bucket[-1][0]
    return last.offset + _aligned(last.nbytes)


def pack_into(buffer: torch.Tensor, bucket: list[tuple[TensorMeta, torch.Tensor]]) -> torch.Tensor:
    """Copy the bucket's tensors into ``buffer`` (uint8, large enough); returns the used prefix."""
    for meta, t in bucket:
        view(buffer, meta).copy_(t)
    return buffer[: bucket_nbytes(bucket)]


def view(buffer: torch.Tensor, meta: TensorMeta) -> torch.Tensor:
    """The tensor ``meta`` describes, as a view into a packed uint8 buffer (no copy)."""
    return buffer[meta.offset : meta.offset + meta.nbytes].view(meta.dtype).view(meta.shape)


def unpack(buffer: torch.Tensor, metas: list[TensorMeta]) -> list[tuple[str, torch.Tensor]]:
    return [(m.name, view(buffer, m)) for m in metas]
