"""Colocated GRPO on a Qwen3-4B-shaped model on one GPU: the step of 2026-12-01 ("before") against
vime's fast path ("after"), and a learning run at that size.

    python3 benchmarks/bench_qwen3_4b_gpu.py --variant before --steps 4 --out $OUT
    python3 benchmarks/bench_qwen3_4b_gpu.py --variant after --steps 20 --task known-tokens --out $OUT
    python3 benchmarks/bench_qwen3_4b_gpu.py --variant after --dry-run     # the argv, no GPU
    python3 benchmarks/bench_qwen3_4b_gpu.py --variant rollout --steps 4   # the "after" engine alone
    python3 benchmarks/bench_qwen3_4b_gpu.py --variant rollout-old ...     # with 2026-12-02's request

Both variants run train.py with the command of the measurement the fast path is judged against
(``--preset tiny-cpu --colocate --train-backend megatron --bf16``, 32 prompts x 8 samples, 256-token
answers, Megatron trainer, vLLM engine on the same GPU). ``before`` adds that run's engine flags
(``--vllm-enforce-eager --vllm-gpu-memory-utilization 0.3``) and nothing else: fixed micro-batches of
16 samples, both log-prob passes, sleep level 1. ``after`` (``AFTER``) lets vLLM compile and capture
CUDA graphs, sizes the engine for the rollout it serves, sleeps at level 2 (the update overwrites
every weight), batches by a token budget, takes the old log-probs from the engine, keeps the
trainer's state on the GPU (``--no-offload-train``: on an H200 both sides should fit) and, its KV
cache sized in bytes, starts the engine beside the trainer instead of after it. If that run makes
no step, it is repeated with the trainer starting first (the 2026-12-02 order, CUDA graphs and all)
and the report says so.

Tasks: ``math`` (the preset's arithmetic, reward 0 for a random model: timing only) or ``known-tokens``
(``benchmarks.gpu_tasks.known_token_reward``: the share of the answer's positions that hold a token
the tokenizer knows, a signal a random-weight model has from its first step).

Reported per step from train.py's metrics: rollout / train / update / sleep-wake / offload seconds,
tokens, reward, the train phase's MFU counted over every pass it makes (policy forward + backward 6N
per token, the reference pass 2N, the old policy's pass 2N where the step made one, a recompute
forward 2N; N = parameters with the tied embedding once; attention's score FLOPs, under 1 % at these
lengths, left out) against the measured bf16 matmul rate; start-up (launch to the first step's start,
and train.py's own split of it: ``startup/*``); peak GPU memory (nvidia-smi, every 0.5 s); the
trainer's pinned host region against the state it holds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

BF16_PEAK = 790e12  # dense bf16 matmul FLOP/s measured on the lent H200 and H100 (device KINDS.md)
BEFORE = ["--vllm-enforce-eager", "--vllm-gpu-memory-utilization", "0.3"]
# weights 8 GB + KV for 256 x ~300 tokens (11 GB) + graphs: 0.2 of an H200. The KV cache sized in
# bytes (16 GiB, ~116k tokens at 144 KiB a token) lets the engine start beside the trainer
# (vime/utils/args/start_order.py); the utilisation is then only vLLM's free-memory check at its start
AFTER_ENGINE = [
    "--vllm-gpu-memory-utilization", "0.2", "--vllm-max-model-len", "1024",
    "--vllm-kv-cache-memory-bytes", "16G",
]  # fmt: skip
AFTER = AFTER_ENGINE + [
    "--rollout-sleep-level", "2",
    "--use-dynamic-batch-size", "--max-tokens-per-gpu", "6144",
    "--use-rollout-logprobs",
    # by the 2026-12-02 peaks the trainer's 60 GiB of state and the engine's 28 GB should fit the H200
    # together (peak 132 GiB was the train phase, engine asleep; not run yet): keeping the state
    # resident skips two 60 GiB copies a step
    "--no-offload-train",
]  # fmt: skip


# the engine alone (no trainer: fits an 80 GB H100): the "after" engine, its rollout and start-up
ROLLOUT_ONLY = ["--debug-rollout-only", *AFTER_ENGINE]

ENGINE_KEYS = (
    "rollout/engine_request_s_mean", "rollout/engine_decode_s_mean", "rollout/engine_queue_s_mean",
    "rollout/engine_inter_token_s_mean", "rollout/engine_steps", "rollout/engine_tokens_per_step_mean",
    "rollout/engine_preemptions",
)  # fmt: skip


def launch_argv(variant: str, work: Path, out: Path, steps: int, response_len: int, task: str) -> list[str]:
    argv = [
        "--preset", "tiny-cpu", "--colocate", "--train-backend", "megatron", "--bf16",
        "--hf-checkpoint", str(work / "qwen3-4b"), "--prompt-data", str(work / "math.jsonl"),
        "--input-key", "input", "--label-key", "label",
        "--rollout-num-gpus", "1", "--rollout-num-engines", "1",
        "--rollout-batch-size", "32", "--n-samples-per-prompt", "8",
        "--rollout-max-response-len", str(response_len), "--num-rollout", str(steps),
        "--metrics-jsonl", str(out / f"{variant}.jsonl"),
        "--run-dir", str(out / f"{variant}_run"),  # its logs/ holds the engine's own log (start-up split)
        "--save-debug-rollout-data", str(work / variant / "rollout_{rollout_id}.pkl"),
    ]  # fmt: skip
    if task == "known-tokens":
        argv += ["--custom-rm-path", "benchmarks.gpu_tasks.known_token_reward", "--lr", "1e-4"]
    if variant.startswith("rollout"):
        argv = [a for a in argv if a not in ("--colocate", "--bf16")] + ROLLOUT_ONLY
        if variant == "rollout-old":  # the request of 2026-12-02, same engine and session
            argv += ["--custom-generate-function-path", "benchmarks.gpu_tasks.generate_with_engine_defaults"]
        return argv
    return argv + (BEFORE if variant == "before" else AFTER)


def passes_per_token(argv: list[str], record: dict) -> float:
    """Model FLOPs per token of one step's train phase, in units of N (parameters)."""
    flops = 6.0  # the policy's forward and backward
    flops += 2.0  # the reference log-probs (the preset's --use-kl-loss)
    # the old policy's log-probs: a pass of their own only when recomputed (with one optimizer step
    # per rollout they come from the training forward, and --use-rollout-logprobs takes the engine's)
    flops += 2.0 * record.get("train/old_log_probs_pass", 0.0)
    if "--recompute-granularity" in argv:
        flops += 2.0
    return flops


class StepClock(threading.Thread):
    """When each line of the metrics file appeared (a step's end), polled every 0.2 s."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path, self.seen, self.stop = path, [], threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.2):
            if self.path.exists():
                lines = sum(1 for line in self.path.read_text().splitlines() if line.strip())
                while len(self.seen) < lines:
                    self.seen.append(time.perf_counter())


def without_side_by_side_start(argv: list[str]) -> list[str]:
    """``argv`` with the engine's KV cache sized by vLLM's profile again: the trainer starts first."""
    if "--vllm-kv-cache-memory-bytes" not in argv:
        return argv
    at = argv.index("--vllm-kv-cache-memory-bytes")
    return argv[:at] + argv[at + 2 :]


def run_variant(opts: argparse.Namespace, serial_fallback: bool = False) -> dict:
    from bench_moe_gpu import GpuMemorySampler
    from bench_slime_recipe_gpu import summarize

    argv = launch_argv(opts.variant, opts.work, opts.out, opts.steps, opts.response_len, opts.task)
    if serial_fallback:
        argv = without_side_by_side_start(argv)
    (opts.work / opts.variant).mkdir(parents=True, exist_ok=True)
    metrics = opts.out / f"{opts.variant}.jsonl"
    metrics.unlink(missing_ok=True)
    command = [sys.executable, str(ROOT / "train.py"), *argv]
    clock = StepClock(metrics)
    clock.start()
    started = time.perf_counter()
    with GpuMemorySampler() as memory, open(opts.out / f"{opts.variant}.log", "ab") as log:
        try:
            rc = subprocess.run(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=opts.timeout)
            result: dict = {"rc": rc.returncode}
        except subprocess.TimeoutExpired:
            result = {"rc": "timeout"}
    clock.stop.set()
    clock.join()
    result |= {"argv": argv, "wall_s": time.perf_counter() - started, "peak_gpu_mib": memory.peak_mib}
    records = [json.loads(line) for line in metrics.read_text().splitlines()] if metrics.exists() else []
    from bench_slime_recipe_gpu import sum_params

    params = sum_params(opts.work / "qwen3-4b")
    result |= summarize(records, opts.work / opts.variant, params)
    for row, record in zip(result["steps"], records, strict=False):
        per_token = row["flops_per_token_in_N"] = passes_per_token(argv, record)
        row["reward"] = record.get("rollout/raw_reward")
        row["train_rollout_logprob_abs_diff"] = record.get("train/train_rollout_logprob_abs_diff")
        for key in ("offload/host_region_gib", "offload/torch_pinned_gib", "offload/copied_gib"):
            if key in record:
                row[key] = record[key]
        # the engine's own account of the rollout (vime/rollout/engine_stats.py)
        row |= {k: v for k, v in record.items() if k.startswith(("rollout/engine_", "train/offload"))}
        if row.get("tokens") and record.get("time/train"):
            # summarize() counts 6N; every pass of the phase counts here
            row["train_mfu_all_passes"] = (
                per_token * params * row["tokens"] / record["time/train"] / BF16_PEAK
            )
    if clock.seen and records:
        result["startup_s"] = clock.seen[0] - started - records[0].get("time/step", 0.0)
        result["startup_phases"] = {k: v for k, v in records[0].items() if k.startswith("startup/")}
    later = [r for r in result["steps"] if r.get("step")]
    if later and any(r.get("train_mfu_all_passes") for r in later):
        result["median_steps_1_on"]["train_mfu_all_passes"] = statistics.median(
            r["train_mfu_all_passes"] for r in later if r.get("train_mfu_all_passes")
        )
    for key in ENGINE_KEYS:
        values = [r[key] for r in later if r.get(key) is not None]
        if values:
            result["median_steps_1_on"][key] = statistics.median(values)
    result |= {"parameters": params, "serial_fallback": serial_fallback}
    return result


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--variant", choices=["before", "after", "rollout", "rollout-old"], required=True)
    cli.add_argument("--task", choices=["math", "known-tokens"], default="math")
    cli.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/q4b-out")))
    cli.add_argument("--work", type=Path, default=Path("/tmp/q4b"))
    cli.add_argument("--steps", type=int, default=5)
    cli.add_argument("--response-len", type=int, default=256)
    cli.add_argument("--timeout", type=int, default=520, help="seconds train.py may take")
    cli.add_argument("--dry-run", action="store_true", help="print train.py's argv and exit")
    opts = cli.parse_args()
    if opts.dry_run:
        print(
            " ".join(launch_argv(opts.variant, opts.work, opts.out, opts.steps, opts.response_len, opts.task))
        )
        return
    from bench_slime_recipe_gpu import prepare

    opts.out.mkdir(parents=True, exist_ok=True)
    prepared = prepare(opts.work, "input", "label")  # skipped when the checkpoint is there
    started = time.perf_counter()
    result = run_variant(opts)
    if opts.variant == "after" and not result["steps"] and time.perf_counter() - started < opts.timeout / 2:
        result = {"side_by_side_attempt": {k: result[k] for k in ("rc", "wall_s")}} | run_variant(opts, True)
    result["prepare"] = prepared
    (opts.out / f"{opts.variant}.json").write_text(json.dumps(result, indent=1, default=str))
    print(json.dumps({k: v for k, v in result.items() if k not in ("steps", "argv")}, indent=1, default=str))
    for row in result["steps"]:
        print({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()})


if __name__ == "__main__":
    main()
