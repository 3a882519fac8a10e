"""Send the trainer's weights to the rollout engines: gather, rename to HF, bucket, send under a lock.

Sequence (as in slime): lock -> send every bucket -> clear (the sink's ``finish``: engines drop their
prefix caches) -> unlock. The lock keeps two senders (say two pipeline stages, or a retried update)
from interleaving their buckets on the same engines.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from pathlib import Path

import torch

from vime.backends.megatron_utils.buckets import (
    CachedPacker,
    TensorMeta,
    bucket_nbytes,
    pack_into,
    plan_buckets,
)
from vime.backends.megatron_utils.hf_io import hf_views, iter_hf_tensors, plan_hf_tensors, shard_layout
from vime.backends.megatron_utils.weight_sinks import WeightSink

# 512 MiB: the measured best for a 1.5B model on two H200s (docs/benchmarks.md), and the default of
# --update-weight-buffer-size
DEFAULT_BUCKET_BYTES = 512 << 20


@contextlib.contextmanager
def _held(lock):
    if lock is None:
        yield
        return
    lock.acquire()
    try:
        yield
    finally:
        lock.release()


def send_weights(
    named_tensors: Iterable[tuple[str, torch.Tensor]],
    plan: list[list[TensorMeta]],
    sink: WeightSink,
    *,
    lock=None,
    device: torch.device | str | None = None,
    progress: bool = True,
    buffers: list[torch.Tensor | None] | None = None,
    packer: CachedPacker | None = None,
) -> int:
    """Pack ``named_tensors`` (produced lazily, in plan order) bucket by bucket into ``sink``.

    Two pack buffers alternate (pass a list of two to keep them between calls), so packing bucket
    i+1 overlaps an asynchronous send of bucket i. With those buffers kept, a ``packer`` keeps each
    bucket's destination views too (one fused copy per bucket). Returns the bytes sent.
    """
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    tensors = iter(named_tensors)
    buffers = buffers if buffers is not None else [None, None]
    total = sum(bucket_nbytes(b) for b in plan)
    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        transient=True,
        disable=not progress,
    )
    with _held(lock), bar:
        task = bar.add_task("update weights", total=total)
        sink.begin(plan)
        for i, metas in enumerate(plan):
            batch = [next(tensors) for _ in metas]
            for meta, (name, _) in zip(metas, batch, strict=True):
                if name != meta.name:
                    raise RuntimeError(f"weight export out of plan order: expected {meta.name}, got {name}")
            need, slot = bucket_nbytes(metas), i % 2
            if hasattr(sink, "wait_oldest") and i >= 2:
                sink.wait_oldest()  # the send that last used this buffer must be done
            if buffers[slot] is None or buffers[slot].numel() < need:
                dev = device if device is not None else batch[0][1].device
                buffers[slot] = torch.empty(max(need, bucket_nbytes(plan[0])), dtype=torch.uint8, device=dev)
            tensors_of_bucket = [t for _, t in batch]
            if packer is not None:
                flat = packer.pack(i, buffers[slot], metas, tensors_of_bucket)
            else:
                flat = pack_into(buffers[slot], metas, tensors_of_bucket)
            sink.send(metas, flat)
            bar.update(task, advance=need)
        sink.finish()
    return total


class WeightExporter:
    """The export of one model: bucket plan built once and reused for every update.

    At tensor and expert parallel size 1 it also keeps zero-copy views of the parameters under HF names
    (hf_io.hf_views), so an update is nothing but one copy per tensor into the bucket buffers and one
    broadcast per bucket. With tensor parallel > 1 every update gathers the shards again.
    Every rank calls ``send`` (the gathers are collective); only the first data-parallel, first
    tensor-parallel rank of each pipeline stage feeds the sink.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        shape,
        bucket_bytes: int = DEFAULT_BUCKET_BYTES,
        first_bucket_bytes: int | None = None,
    ):
        self.model, self.shape = model, shape
        self.plan = plan_buckets(plan_hf_tensors(model, shape), bucket_bytes, first_bucket_bytes)
        layout = shard_layout(model)
        unsharded = layout.tp_size == 1 and layout.ep_size == 1 and layout.etp_size == 1
        self.views = hf_views(model, shape) if unsharded else None
        self.buffers: list[torch.Tensor | None] = [None, None]
        self.packer = CachedPacker()

    def in_place(self) -> list[tuple[str, torch.Tensor]]:
        """The HF tensors as views of the parameters, in their HF shapes.

        q/k/v views keep a [groups, rows, ...] shape that no strided view of the packed parameter has in
        HF's 2-D form, so those alone are copied, into one buffer made for this update.
        """
        metas = [m for bucket in self.plan for m in bucket]
        reshaped = [
            i
            for i, ((_, v), m) in enumerate(zip(self.views, metas, strict=True))
            if tuple(v.shape) != m.shape
        ]
        out = list(self.views)
        if reshaped:
            first = self.views[reshaped[0]][1]
            scratch = torch.empty(
                sum(metas[i].nbytes for i in reshaped), dtype=torch.uint8, device=first.device
            )
            offset = 0
            for i in reshaped:
                name, view = self.views[i]
                target = scratch[offset : offset + metas[i].nbytes].view(view.dtype).view(metas[i].shape)
                target.view(view.shape).copy_(view)
                out[i] = (name, target)
                offset += metas[i].nbytes
        return out

    def tensors(self) -> Iterable[tuple[str, torch.Tensor]]:
        return iter(self.views) if self.views is not None else iter_hf_tensors(self.model, self.shape)

    def send(self, sink: WeightSink, **kwargs) -> int:
        from megatron.core import parallel_state

        if parallel_state.get_data_parallel_rank() != 0:
            if _holds_experts_for_sender(self.model):  # its experts join the sender's gathers
                for _ in iter_hf_tensors(self.model, self.shape, experts_only=True):
                    pass
            return 0
        if is_weight_source():
            if self.views is not None and getattr(sink, "takes_views", False):
                return sink.send_views(self.in_place())  # no packing: the engine copies from the parameters
            return send_weights(
                self.tensors(), self.plan, sink, buffers=self.buffers, packer=self.packer, **kwargs
            )
        for _ in self.tensors():  # take part in the tensor-parallel gathers
            pass
        return 0


def _holds_experts_for_sender(model: torch.nn.Module) -> bool:
    """A rank outside data-parallel rank 0 whose routed experts the sender still needs: with expert
    parallel the experts of one model copy are spread over the expert-data-parallel rank 0 ranks."""
    from megatron.core import parallel_state

    layout = shard_layout(model)
    return (
        layout.local_experts > 0
        and layout.ep_size * layout.etp_size > 1
        and parallel_state.get_expert_data_parallel_rank() == 0
    )


def is_weight_source() -> bool:
    """True on the rank that sends its pipeline stage's weights."""
    from megatron.core import parallel_state

    return (
        parallel_state.get_data_parallel_rank() == 0 and parallel_state.get_tensor_model_parallel_rank() == 0
    )


def export_to_hf_dir(actor, dest: str | Path, hf_source_dir: str | Path | None = None, **kwargs) -> Path:
    """Write the actor's weights as an HF checkpoint directory (collective over all ranks)."""
    return export_model_to_hf_dir(actor.weight_exporter(), dest, hf_source_dir, **kwargs)


def export_model_to_hf_dir(
    exporter: WeightExporter, dest: str | Path, hf_source_dir: str | Path | None = None, **kwargs
) -> Path:
    """Write an exporter's model as an HF checkpoint directory (collective over all ranks).

    Each pipeline stage writes its own files; rank 0 then writes the merged index and, when given,
    copies config and tokenizer files from ``hf_source_dir``. This is the CPU path to the engines.
    """
    import json

    import torch.distributed as dist
    from megatron.core import parallel_state

    from vime.backends.megatron_utils.hf_io import write_hf_config
    from vime.backends.megatron_utils.weight_sinks import DiskSink

    dest = Path(dest)
    stage = parallel_state.get_pipeline_model_parallel_rank()
    sink = DiskSink(dest, file_prefix=f"model-pp{stage:02d}", write_index=False)
    exporter.send(sink, **kwargs)
    maps: list = [None] * dist.get_world_size()
    dist.all_gather_object(maps, (sink.weight_map, sink.total) if is_weight_source() else ({}, 0))
    if dist.get_rank() == 0:
        weight_map = {k: v for m, _ in maps for k, v in m.items()}
        total = sum(t for _, t in maps)
        index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
        (dest / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
        if hf_source_dir is not None:
            write_hf_config(hf_source_dir, dest)
    dist.barrier()
    return dest
