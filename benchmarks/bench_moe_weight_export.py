"""The per-tensor cost of exporting a mixture-of-experts model's weights, on the CPU.

    python benchmarks/bench_moe_weight_export.py [--layers 48] [--experts 128] [--repeats 5] [--json OUT]

A Qwen3-30B-A3B-like layout with tiny dimensions: ``--layers`` MoE layers of ``--experts`` experts
(hidden 64, expert FFN 32, top-8), i.e. Qwen3-30B-A3B's 48 x 128 x 3 = 18,432 expert tensors but only
a few hundred MB, so the time measured is what each tensor costs, not the bytes. One process builds
the Megatron model (local spec, SequentialMLP experts) from a random HF checkpoint and measures, as
medians of ``--repeats`` after one warm-up:

- the exporter's set-up, once per run: the bucket plan and the zero-copy HF views of every tensor;
- an update packed tensor by tensor (``pack_into``: a view and a copy per tensor, the path before
  ``CachedPacker``), and with the cached packer (one fused multi-tensor copy per bucket);
- the reference: one copy of the same bytes as a single tensor (what the bytes alone cost);
- the disk path the CPU engines use (``export_model_to_hf_dir``: buckets written as safetensors).

Prints one table; ``--json`` writes the numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def timed(fn, repeats: int) -> list[float]:
    fn()  # warm-up
    out = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def hf_checkpoint(dest: Path, layers: int, experts: int) -> Path:
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

    config = Qwen3MoeConfig(
        vocab_size=512,
        hidden_size=64,
        intermediate_size=96,
        moe_intermediate_size=32,
        num_experts=experts,
        num_experts_per_tok=8,
        norm_topk_prob=True,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=256,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    Qwen3MoeForCausalLM(config).float().save_pretrained(str(dest))
    return dest


class NullSink:
    def begin(self, plan) -> None:
        pass

    def send(self, metas, flat) -> None:
        pass

    def finish(self) -> None:
        pass


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--layers", type=int, default=48)
    cli.add_argument("--experts", type=int, default=128)
    cli.add_argument("--repeats", type=int, default=5)
    cli.add_argument("--bucket-mb", type=int, default=512)
    cli.add_argument("--json", default=None)
    opts = cli.parse_args()

    from megatron_cpu_support import megatron_on_cpu

    from vime.backends.megatron_utils.buckets import bucket_nbytes, pack_into
    from vime.backends.megatron_utils.hf_config import load_shape
    from vime.backends.megatron_utils.hf_io import load_hf_into_megatron
    from vime.backends.megatron_utils.model_builder import ParallelSizes, build_gpt_model
    from vime.backends.megatron_utils.weight_export import (
        WeightExporter,
        export_model_to_hf_dir,
        send_weights,
    )

    cpu = megatron_on_cpu()
    next(cpu)
    work = Path(tempfile.mkdtemp(prefix="bench_moe_export_"))
    result: dict = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "load_1min": os.getloadavg()[0],
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
    }
    started = time.perf_counter()
    hf = hf_checkpoint(work / "hf", opts.layers, opts.experts)
    shape = load_shape(hf)
    model = build_gpt_model(shape, ParallelSizes(), dtype=torch.float32, use_cpu_init=True)
    load_hf_into_megatron(model, hf, shape)
    result["build_and_load_s"] = time.perf_counter() - started

    bucket = opts.bucket_mb << 20
    setup = timed(lambda: WeightExporter(model, shape, bucket), 1)
    exporter = WeightExporter(model, shape, bucket)
    views = list(exporter.tensors())
    nbytes = sum(t.numel() * t.element_size() for _, t in views)
    result |= {
        "tensors": len(views),
        "expert_tensors": sum(".mlp.experts." in n for n, _ in views),
        "bytes": nbytes,
        "buckets": len(exporter.plan),
        "exporter_setup_s": setup[0],
    }
    buffers = [torch.empty(bucket_nbytes(b), dtype=torch.uint8) for b in exporter.plan]

    def per_tensor() -> None:
        source = iter(exporter.tensors())
        for i, metas in enumerate(exporter.plan):
            pack_into(buffers[i], metas, [next(source)[1] for _ in metas])

    def cached() -> None:
        send_weights(exporter.tensors(), exporter.plan, NullSink(), buffers=exporter.buffers,
                     packer=exporter.packer, progress=False)  # fmt: skip

    flat_src = torch.cat([t.reshape(-1).view(torch.uint8) for _, t in views])
    flat_dst = torch.empty_like(flat_src)
    runs = {
        "pack_per_tensor_s": timed(per_tensor, opts.repeats),
        "pack_cached_s": timed(cached, opts.repeats),
        "one_copy_same_bytes_s": timed(lambda: flat_dst.copy_(flat_src), opts.repeats),
    }
    out_dir = work / "export"

    def disk() -> None:
        import shutil

        shutil.rmtree(out_dir, ignore_errors=True)
        export_model_to_hf_dir(exporter, out_dir, progress=False)

    runs["disk_export_s"] = timed(disk, max(1, opts.repeats // 2))
    result |= {k: statistics.median(v) for k, v in runs.items()} | {"runs": runs}
    n = len(views)
    print(
        f"{opts.layers} MoE layers x {opts.experts} experts: {n} tensors ({result['expert_tensors']} expert), "
        f"{nbytes / 2**20:.1f} MiB in {result['buckets']} bucket(s); load {result['load_1min']:.2f}, "
        f"{result['cpus']} cpus"
    )
    print(f"{'what':34s} {'median s':>10s} {'us/tensor':>10s} {'x one copy':>10s}")
    ref = result["one_copy_same_bytes_s"]
    rows = [("exporter set-up (plan + views), once", result["exporter_setup_s"])]
    rows += [(k.removesuffix("_s").replace("_", " "), result[k]) for k in runs]
    for name, seconds in rows:
        print(f"{name:34s} {seconds:10.4f} {seconds / n * 1e6:10.2f} {seconds / ref:10.1f}")
    if opts.json:
        Path(opts.json).write_text(json.dumps(result, indent=1) + "\n")
    with contextlib.suppress(StopIteration):
        next(cpu)


if __name__ == "__main__":
    main()
