"""Colocated LoRA GRPO on a Qwen3-4B-shaped model (random weights built on the device), one H200.

    python3 benchmarks/bench_gpu_lora.py --out $OUT --work /tmp/lora4b --phase prepare   # one device call
    python3 benchmarks/bench_gpu_lora.py --out $OUT --work /tmp/lora4b --steps 4 --repeats 5  # the next

train.py's own loop (``train.train``) runs GRPO with ``--train-backend megatron --colocate --lora-rank
16``: the adapter is the only thing that trains and the only thing that travels (a PEFT directory the
engine loads in place through ``/vime/lora_adapter``). After the last step, in the same session and
with the same model, ``--repeats`` adapter pushes and as many full-weight pushes (``--weight-sync
ipc``, the path and size a merged push takes) are timed, alternating. Writes ``lora_gpu.json``:
per-step metrics (rollout / train / update seconds, bytes sent, reward) and the two pushes' bytes and
median seconds. The model is built by bench_slime_recipe_gpu.prepare (vime's locally trained
tokenizer, a local arithmetic data set).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/lora4b"))
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--response-len", type=int, default=128)
    parser.add_argument(
        "--phase", choices=("prepare", "run", "all"), default="all", help="prepare: build the model only"
    )
    opts = parser.parse_args()
    opts.out.mkdir(parents=True, exist_ok=True)

    import ray
    from bench_slime_recipe_gpu import prepare

    import train as train_py
    import vime.ray.training_run as training_run
    from vime.utils.arguments import parse_args

    report: dict = {"prepare": prepare(opts.work, "input", "label")}  # skipped when the model is there
    if opts.phase == "prepare":
        print(json.dumps(report))
        return
    pushes: dict[str, list[dict]] = {"adapter": [], "full": []}
    original_shutdown = training_run.TrainingRun.shutdown

    def measure_then_shutdown(self, interrupted=False):
        if not interrupted and self.actor is not None and not pushes["adapter"]:
            self.onload_train()  # the loop offloaded it after the last push: time pushes as a step does
            for _ in range(opts.repeats):
                for kind, sync in (("adapter", "adapter"), ("full", "merged")):
                    self.actor.args.lora_sync = (
                        sync  # merged: the regular --weight-sync ipc path, every weight
                    )
                    seconds = self.actor.update_weights(self.rollout)
                    pushes[kind].append(
                        {"seconds": seconds, **(getattr(self.actor, "last_sync", None) or {})}
                    )
            self.actor.args.lora_sync = "adapter"
            self.actor.update_weights(self.rollout)  # leave the engines on base + adapter
            self.offload_train()
        original_shutdown(self, interrupted)

    training_run.TrainingRun.shutdown = measure_then_shutdown
    argv = [
        "--hf-checkpoint", str(opts.work / "qwen3-4b"), "--prompt-data", str(opts.work / "math.jsonl"),
        "--input-key", "input", "--label-key", "label", "--apply-chat-template", "--rm-type", "math",
        "--train-backend", "megatron", "--bf16", "--colocate", "--weight-sync", "ipc",
        "--rollout-num-gpus", "1", "--rollout-num-engines", "1",
        "--lora-rank", str(opts.rank), "--lora-alpha", str(2 * opts.rank),
        "--rollout-batch-size", "8", "--n-samples-per-prompt", "4", "--global-batch-size", "32",
        "--micro-batch-size", "4", "--rollout-max-response-len", str(opts.response_len),
        "--num-rollout", str(opts.steps), "--lr", "1e-4",
        "--vllm-enforce-eager", "--vllm-gpu-memory-utilization", "0.3", "--vllm-max-model-len", "1024",
        "--metrics-jsonl", str(opts.out / "lora_gpu.jsonl"), "--run-dir", str(opts.out / "run"),
    ]  # fmt: skip
    report["argv"] = argv
    started = time.perf_counter()
    train_py.train(parse_args(argv))
    report["wall_s"] = time.perf_counter() - started
    records = [json.loads(line) for line in (opts.out / "lora_gpu.jsonl").read_text().splitlines() if line]
    report["steps"] = [
        {
            k: v
            for k, v in r.items()
            if k.startswith(("time/", "weight_sync/", "rollout/raw_reward", "train/pg"))
        }
        for r in records
    ]
    report["pushes"] = {
        kind: {
            "median_s": statistics.median(p["seconds"] for p in runs),
            "all_s": [round(p["seconds"], 4) for p in runs],
            "bytes": runs[-1].get("weight_sync/bytes"),
        }
        for kind, runs in pushes.items()
        if runs
    }
    if len(report["pushes"]) == 2:
        report["full_over_adapter_s"] = (
            report["pushes"]["full"]["median_s"] / report["pushes"]["adapter"]["median_s"]
        )
    (opts.out / "lora_gpu.json").write_text(json.dumps(report, indent=2))
    print(json.dumps({k: v for k, v in report.items() if k != "argv"}, indent=2))
    ray.shutdown()


if __name__ == "__main__":
    main()
