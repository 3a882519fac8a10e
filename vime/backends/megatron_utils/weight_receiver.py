"""Receiving end of ``NcclBroadcastSink``: buckets land in two alternating buffers and are copied into
the model on a side stream, so copying bucket i overlaps receiving bucket i+1.

Used by the GPU benchmark's receiver (an HF model on another GPU) and meant for an engine-side
worker extension: ``load`` is whatever puts a list of (HF name, tensor view) into the model.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.distributed as dist

from vime.backends.megatron_utils.buckets import unpack


class BucketReceiver:
    def __init__(self, group, src: int, bucket_bytes: int, device: torch.device):
        self.group, self.src, self.device = group, src, device
        self.buffers = [torch.empty(bucket_bytes, dtype=torch.uint8, device=device) for _ in range(2)]
        self.copy_stream = torch.cuda.Stream(device=device)
        self.done: list[torch.cuda.Event | None] = [None, None]

    def receive_all(self, load: Callable[[list[tuple[str, torch.Tensor]]], None]) -> int:
        """Receive buckets until the sender's end-of-stream; returns the bytes received."""
        received, i = 0, 0
        current = torch.cuda.current_stream(self.device)
        while True:
            box: list = [None]
            dist.broadcast_object_list(box, src=self.src, group=self.group, device=self.device)
            if box[0] is None:
                break
            metas, nbytes = box[0]
            slot = i % 2
            if self.done[slot] is not None:
                current.wait_event(self.done[slot])  # bucket i-2's copies out of this buffer are done
            if self.buffers[slot].numel() < nbytes:
                self.buffers[slot] = torch.empty(nbytes, dtype=torch.uint8, device=self.device)
            flat = self.buffers[slot][:nbytes]
            dist.broadcast(flat, self.src, group=self.group)
            self.copy_stream.wait_stream(current)
            with torch.cuda.stream(self.copy_stream), torch.no_grad():
                load(unpack(flat, metas))
                self.done[slot] = self.copy_stream.record_event()
            received += nbytes
            i += 1
        current.wait_stream(self.copy_stream)
        return received


def copy_into_module(module: torch.nn.Module) -> Callable[[list[tuple[str, torch.Tensor]]], None]:
    """A ``load`` for ``receive_all`` that copies each tensor into the parameter of the same HF name."""
    params = dict(module.named_parameters())

    def load(pairs: list[tuple[str, torch.Tensor]]) -> None:
        for name, t in pairs:
            if name not in params:
                raise KeyError(f"receiver model has no parameter {name!r}; sender and receiver models differ")
            params[name].data.copy_(t, non_blocking=True)

    return load
