"""Where exported weight buckets go: NCCL broadcast to engines, CUDA IPC handles, or disk.

A sink sees ``begin(plan)`` (every bucket's metadata, before any data), then ``send(metas, flat)``
per bucket, then ``finish()``. The exporter (weight_export.py) holds the engines' lock around the
whole sequence.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import torch
import torch.distributed as dist

from vime.backends.megatron_utils.buckets import TensorMeta, unpack


class WeightSink(Protocol):
    def begin(self, plan: list[list[TensorMeta]]) -> None: ...
    def send(self, metas: list[TensorMeta], flat: torch.Tensor) -> None: ...
    def finish(self) -> None: ...


class NcclBroadcastSink:
    """Broadcast each bucket from this rank over ``group`` (trainer rank + every engine worker).

    ``announce(plan)`` tells the receivers the whole layout once, before any data (over HTTP for vLLM
    engines, or over the group itself, see ``announce_over_group``); each broadcast is asynchronous,
    so packing the next bucket overlaps it and the receivers never wait on per-bucket metadata.
    ``finish`` waits for the last one, then calls ``on_finish`` (e.g. reset the engines' prefix caches).
    """

    def __init__(self, group, src: int, announce: Callable[[list[list[TensorMeta]]], None], on_finish=None):
        self.group, self.src, self.announce, self.on_finish = group, src, announce, on_finish
        self.pending: list = []

    def begin(self, plan: list[list[TensorMeta]]) -> None:
        self.pending = []
        self.announce(plan)

    def send(self, metas: list[TensorMeta], flat: torch.Tensor) -> None:
        self.pending.append(dist.broadcast(flat, self.src, group=self.group, async_op=True))

    def wait_oldest(self) -> None:
        """Called by the exporter before it reuses a pack buffer (double buffering)."""
        if self.pending:
            self.pending.pop(0).wait()

    def finish(self) -> None:
        while self.pending:
            self.wait_oldest()
        if self.on_finish is not None:
            self.on_finish()


def announce_over_group(group, src: int) -> Callable[[list[list[TensorMeta]]], None]:
    """Send the plan as one pickled object over the same group (receivers without HTTP)."""

    def announce(plan: list[list[TensorMeta]]) -> None:
        dist.broadcast_object_list([plan], src=src, group=group)

    return announce


class IpcSink:
    """Colocated engines: hand each packed bucket over as a CUDA IPC handle (no copy through the host).

    ``deliver(handle, metas)`` passes the handle to the engine (e.g. /collective_rpc to a worker
    extension that calls ``rebuild_ipc_bucket``) and must return once the engine has copied it.
    """

    def __init__(self, deliver: Callable[[tuple, list[TensorMeta]], None], on_finish=None):
        self.deliver, self.on_finish = deliver, on_finish

    def begin(self, plan: list[list[TensorMeta]]) -> None:
        pass

    def send(self, metas: list[TensorMeta], flat: torch.Tensor) -> None:
        from torch.multiprocessing.reductions import reduce_tensor

        torch.cuda.current_stream().synchronize()  # the engine reads it from another process
        self.deliver(reduce_tensor(flat), metas)

    def finish(self) -> None:
        if self.on_finish is not None:
            self.on_finish()


def rebuild_ipc_bucket(handle: tuple, metas: list[TensorMeta]) -> list[tuple[str, torch.Tensor]]:
    """Engine side of ``IpcSink``: views into the trainer's buffer (copy them before returning)."""
    rebuild, args = handle
    return unpack(rebuild(*args), metas)


class DiskSink:
    """Write an HF checkpoint directory (safetensors, one file per bucket, plus the index).

    On the CPU this is how weights reach a vLLM engine: it reloads the directory through
    /collective_rpc. ``on_finish`` runs after the index is written.
    """

    def __init__(
        self, dest: str | Path, on_finish=None, file_prefix: str = "model", write_index: bool = True
    ):
        self.dest, self.on_finish, self.prefix, self.write_index = (
            Path(dest),
            on_finish,
            file_prefix,
            write_index,
        )
        self.weight_map: dict[str, str] = {}
        self.total = 0
        self.count = 0

    def begin(self, plan: list[list[TensorMeta]]) -> None:
        self.dest.mkdir(parents=True, exist_ok=True)
        record = self.dest / f".vime_export_{self.prefix}"
        if record.exists():  # remove only the files our previous export wrote, never anything else
            for fname in record.read_text().split():
                (self.dest / fname).unlink(missing_ok=True)
        self.weight_map, self.total, self.count = {}, 0, 0

    def send(self, metas: list[TensorMeta], flat: torch.Tensor) -> None:
        from safetensors.torch import save_file

        self.count += 1
        fname = f"{self.prefix}-{self.count:05d}.safetensors"
        tensors = {name: t.detach().to("cpu").contiguous() for name, t in unpack(flat, metas)}
        save_file(tensors, str(self.dest / fname), metadata={"format": "pt"})
        for m in metas:
            self.weight_map[m.name] = fname
            self.total += m.nbytes

    def finish(self) -> None:
        files = sorted(set(self.weight_map.values()))
        (self.dest / f".vime_export_{self.prefix}").write_text("\n".join(files) + "\n")
        if self.write_index:
            index = {
                "metadata": {"total_size": self.total},
                "weight_map": dict(sorted(self.weight_map.items())),
            }
            (self.dest / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
        if self.on_finish is not None:
            self.on_finish()
