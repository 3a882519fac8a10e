"""Weight export bandwidth, trainer GPU -> receiver GPU, against NCCL's own broadcast ceiling.

    torchrun --standalone --nproc-per-node 2 benchmarks/bench_megatron_weight_sync.py

Rank 0 is the trainer: a Megatron model (Qwen2-1.5B shape, random, bf16). Rank 1 stands in for a
rollout engine (vLLM is too large to carry to the GPU machine): an HF Qwen2 model with the same
names that loads each received bucket into its parameters. Measured in one run:
  1. ceiling: NCCL broadcast of one flat buffer of 64 MiB .. 2 GiB, rank 0 -> rank 1;
  2. end to end: Megatron params -> HF names -> buckets -> NCCL broadcast -> copied into the HF
     model, for several bucket sizes (start: both ranks synchronised; stop: receiver done);
  3. correctness: after the transfer every HF parameter equals the trainer's tensor bit for bit;
  4. CUDA IPC (the colocated path): one 1 GiB bucket handed over as an IPC handle; rank 1 copies it
     into tensors on the trainer's GPU, as a colocated engine would.
Prints medians and the ratio end-to-end / ceiling(1 GiB).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vime.backends.megatron_utils.hf_config import QWEN2_1_5B, ModelShape, hf_config_dict

MiB = 1 << 20


def timed(fn, reps: int, warmup: int = 2) -> list[float]:
    out = []
    for i in range(warmup + reps):
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        dist.barrier()
        if i >= warmup:
            out.append(time.perf_counter() - t0)
    return out


def hf_receiver_model(shape: ModelShape):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    fields = {k: v for k, v in hf_config_dict(shape).items() if k != "model_type"}
    cfg = Qwen2Config(**{**fields, "max_position_embeddings": 4096})
    with torch.device("cuda"):
        return Qwen2ForCausalLM(cfg).to(torch.bfloat16).eval()


def main() -> None:
    from megatron.core import parallel_state as ps  # noqa: F401

    from vime.backends.megatron_utils.buckets import plan_buckets
    from vime.backends.megatron_utils.hf_io import iter_hf_tensors, plan_hf_tensors
    from vime.backends.megatron_utils.model_builder import ParallelSizes, build_gpt_model
    from vime.backends.megatron_utils.parallel import destroy_megatron_parallel, init_megatron_parallel
    from vime.backends.megatron_utils.weight_export import WeightExporter
    from vime.backends.megatron_utils.weight_receiver import BucketReceiver, copy_into_module
    from vime.backends.megatron_utils.weight_sinks import NcclBroadcastSink, announce_over_group

    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--buckets-mib", default="256,512,1024,2048")
    a = ap.parse_args()
    init_megatron_parallel(ParallelSizes())  # world of 2, tp=1: rank 0 trains, rank 1 receives
    rank = dist.get_rank()
    group = dist.new_group([0, 1], backend="nccl")
    dev = torch.device("cuda", torch.cuda.current_device())
    results: dict = {"model": "qwen2-1.5B-shape", "params_M": round(QWEN2_1_5B.num_params() / 1e6, 1)}

    # 1. NCCL ceiling
    ceiling = {}
    for mib in (64, 256, 1024, 2048):
        buf = torch.empty(mib * MiB, dtype=torch.uint8, device=dev)
        t = statistics.median(timed(lambda b=buf: dist.broadcast(b, 0, group=group), a.reps))
        ceiling[mib] = mib / 1024 / t
    results["nccl_broadcast_GiBps"] = {str(k): round(v, 1) for k, v in ceiling.items()}
    del buf

    # 2. end to end
    if rank == 0:
        model = build_gpt_model(QWEN2_1_5B, ParallelSizes(), dtype=torch.bfloat16).to(dev).eval()
        total = sum(t.numel() * t.element_size() for _, t in iter_hf_tensors(model, QWEN2_1_5B))
    else:
        hf = hf_receiver_model(QWEN2_1_5B)
        total = sum(p.numel() * p.element_size() for p in hf.parameters())
    results["payload_GiB"] = round(total / 2**30, 3)
    e2e = {}
    variants = [(int(x), None) for x in a.buckets_mib.split(",")] + [(1024, 128), (512, 64)]
    for mib, first_mib in variants:
        key = f"{mib}" if first_mib is None else f"{mib}_first{first_mib}"
        if rank == 0:
            sink = NcclBroadcastSink(group, 0, announce_over_group(group, 0))
            exporter = WeightExporter(model, QWEN2_1_5B, mib * MiB, first_mib * MiB if first_mib else None)

            def once(sink=sink, exporter=exporter):
                exporter.send(sink, progress=False)
        else:
            receiver = BucketReceiver(group, 0, dev)
            load = copy_into_module(hf)

            def once(receiver=receiver, load=load):
                receiver.receive_all(load)

        t = statistics.median(timed(once, a.reps))
        e2e[key] = total / 2**30 / t
        del once
        torch.cuda.empty_cache()
    results["end_to_end_GiBps"] = {str(k): round(v, 1) for k, v in e2e.items()}
    best = max(e2e, key=e2e.get)
    results["best_bucket_MiB"] = best
    results["ratio_best_vs_ceiling_1GiB"] = round(e2e[best] / ceiling[1024], 3)
    results["ratio_1GiB_vs_ceiling_1GiB"] = round(e2e.get("1024", 0) / ceiling[1024], 3)

    # 3. correctness: every received tensor equals the sent one bit for bit (fp64 sums of the bits
    # of every tensor, compared name by name)
    with torch.no_grad():
        if rank == 0:
            sums = {
                n: t.view(torch.int16).double().sum().item() for n, t in iter_hf_tensors(model, QWEN2_1_5B)
            }
        else:
            sums = {n: p.view(torch.int16).double().sum().item() for n, p in hf.named_parameters()}
    both: list = [None, None]
    dist.all_gather_object(both, sums, group=group)
    results["weights_bitwise_equal"] = both[0] == both[1]
    if rank == 0:
        print("RESULT " + json.dumps(results), flush=True)

    # 4. CUDA IPC hand-over of one 1 GiB bucket (the colocated path): rank 1 opens rank 0's buffer and
    # copies it into tensors of its own on the SAME GPU, as a colocated engine would
    from torch.multiprocessing.reductions import reduce_tensor

    from vime.backends.megatron_utils.buckets import pack_into
    from vime.backends.megatron_utils.weight_sinks import rebuild_ipc_bucket

    box: list = [None]
    if rank == 0:
        first = plan_buckets(plan_hf_tensors(model, QWEN2_1_5B), 1024 * MiB)[0]
        source = iter_hf_tensors(model, QWEN2_1_5B)
        flat = pack_into(
            torch.empty(1024 * MiB + MiB, dtype=torch.uint8, device=dev),
            first,
            [next(source)[1] for _ in first],
        )
        torch.cuda.synchronize()
        box = [(reduce_tensor(flat), first)]
    dist.broadcast_object_list(box, src=0, group=group, device=dev)
    load_ipc, error = (lambda: None), None
    if rank == 1:
        try:
            pairs = rebuild_ipc_bucket(*box[0])
            dests = [torch.empty_like(v) for _, v in pairs]  # on the trainer's GPU, like a colocated engine

            def load_ipc():
                for d, (_, v) in zip(dests, pairs, strict=True):
                    d.copy_(v, non_blocking=True)
                torch.cuda.synchronize(pairs[0][1].device)

            ipc_bytes = sum(m.nbytes for m in box[0][1])
        except Exception as exc:  # report, and keep rank 0 from waiting forever
            error = f"{type(exc).__name__}: {exc}"
    t = statistics.median(timed(load_ipc, a.reps))
    out: list = [None, None, error]
    if rank == 1 and error is None:
        same = all(torch.equal(d, v) for d, (_, v) in zip(dests, pairs, strict=True))
        out = [round(ipc_bytes / 2**30 / t, 1), same, None]
    dist.broadcast_object_list(out, src=1, group=group, device=dev)
    if rank == 0:
        print(
            "IPC "
            + json.dumps(
                {"ipc_same_gpu_copy_GiBps": out[0], "ipc_bucket_equal": out[1], "ipc_error": out[2]}
            ),
            flush=True,
        )
    dist.barrier()
    destroy_megatron_parallel()


if __name__ == "__main__":
    main()
