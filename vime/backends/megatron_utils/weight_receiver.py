"""Receiving end of ``NcclBroadcastSink``: the plan arrives once, then buckets land in two alternating
buffers and are copied into the model on a side stream, so copying bucket i overlaps receiving
bucket i+1 and the host never waits between buckets.

Used by the GPU benchmark's receiver (an HF model on another GPU) and meant for an engine-side
worker extension: ``load`` is whatever puts a list of (HF name, tensor view) into the model.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.distributed as dist

from vime.backends.megatron_utils.buckets import TensorMeta, bucket_nbytes, unpack


class BucketReceiver:
    def __init__(self, group, src: int, device: torch.device):
        self.group, self.src, self.device = group, src, device
        self.buffers: list[torch.Tensor | None] = [None, None]
        self.copy_stream = torch.cuda.Stream(device=device)

    def receive_plan(self) -> list[list[TensorMeta]]:
        box: list = [None]
        dist.broadcast_object_list(box, src=self.src, group=self.group, device=self.device)
        return box[0]

    def receive_all(self, load: Callable[[list[tuple[str, torch.Tensor]]], None]) -> int:
        """Receive one whole update (plan, then every bucket); returns the bytes received."""
        plan = self.receive_plan()
        current = torch.cuda.current_stream(self.device)
        done: list[torch.cuda.Event | None] = [None, None]
        largest = max(bucket_nbytes(m) for m in plan)
        for i, metas in enumerate(plan):
            slot = i % 2
            if done[slot] is not None:
                current.wait_event(done[slot])  # bucket i-2's copies out of this buffer are done
            if self.buffers[slot] is None or self.buffers[slot].numel() < largest:
                self.buffers[slot] = torch.empty(largest, dtype=torch.uint8, device=self.device)
            flat = self.buffers[slot][: bucket_nbytes(metas)]
            dist.broadcast(flat, self.src, group=self.group)
            self.copy_stream.wait_stream(current)
            with torch.cuda.stream(self.copy_stream), torch.no_grad():
                load(unpack(flat, metas))
                done[slot] = self.copy_stream.record_event()
        current.wait_stream(self.copy_stream)
        return sum(bucket_nbytes(m) for m in plan)


def copy_into_module(module: torch.nn.Module) -> Callable[[list[tuple[str, torch.Tensor]]], None]:
    """A ``load`` for ``receive_all`` that copies each tensor into the parameter of the same HF name."""
    params = dict(module.named_parameters())

    def load(pairs: list[tuple[str, torch.Tensor]]) -> None:
        for name, t in pairs:
            if name not in params:
                raise KeyError(f"receiver model has no parameter {name!r}; sender and receiver models differ")
            params[name].data.copy_(t, non_blocking=True)

    return load
