"""Peak training memory follows --max-tokens-per-gpu, not the longest sample (torch backend, CPU).

    .venv/bin/python benchmarks/bench_dynamic_batching.py [--repeats 3] [--out result.json]

One training step of a small random Qwen2 model (4 layers, hidden 512) on 32 samples: 31 short ones
(48-80 tokens) and one long one (LONG tokens, varied). Two batchings of the same samples:
fixed micro-batches of 8 (the long sample's micro-batch is padded to its length: 8 x LONG
positions) and dynamic batching with a budget of 2,048 positions (the long sample alone, the short
ones packed up to the budget). Each run is a fresh process; the figure is the growth of its peak
resident memory during the step (ru_maxrss after the step minus after start-up), median of the
repeats, with the step's seconds. The loss and gradients are the same either way
(tests/test_micro_batches.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BUDGET = 2048
CONFIGS = {
    "fixed_mbs8": [],
    "dynamic_2048": ["--use-dynamic-batch-size", "--max-tokens-per-gpu", str(BUDGET)],
}


def build_model(dest: Path) -> Path:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from vime.utils.tiny_model import build_tokenizer

    if (dest / "config.json").exists():
        return dest
    tok = build_tokenizer(dest / "tok")
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=len(tok), hidden_size=512, intermediate_size=1536, num_hidden_layers=4,
        num_attention_heads=8, num_key_value_heads=2, head_dim=64, max_position_embeddings=8192,
        tie_word_embeddings=True,
    )  # fmt: skip
    Qwen2ForCausalLM(config).save_pretrained(str(dest))
    tok.save_pretrained(str(dest))
    return dest


def child(model: Path, long_len: int, extra: list[str]) -> dict:
    import torch

    from vime.backends.factory import make_backend
    from vime.backends.train_data import TrainBatch
    from vime.utils.arguments import parse_args

    torch.set_num_threads(2)
    args = parse_args(
        ["--debug-train-only", "--hf-checkpoint", str(model), "--rollout-batch-size", "16",
         "--n-samples-per-prompt", "2", "--num-rollout", "1", "--micro-batch-size", "8", *extra]
    )  # fmt: skip
    backend = make_backend(args, rank=0, world_size=1)
    backend.init()
    gen = torch.Generator().manual_seed(1)
    lengths = [int(torch.randint(48, 81, (1,), generator=gen)) for _ in range(31)] + [long_len]
    data = {
        "tokens": [torch.randint(5, 400, (n,), generator=gen).tolist() for n in lengths],
        "response_lengths": [n // 2 for n in lengths],
        "rewards": [1.0, -1.0] * 16,
    }
    data["loss_masks"] = [[1] * r for r in data["response_lengths"]]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    metrics = backend.train(0, TrainBatch.from_rollout_data(data))
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"peak_growth_mib": (after - before) / 1024, "seconds": seconds, "grad_norm": metrics["grad_norm"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--longs", type=int, nargs="+", default=[512, 1024, 2048])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", nargs=3, metavar=("MODEL", "LONG", "CONFIG"), help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        model, long_len, config = opts.child
        print(json.dumps(child(Path(model), int(long_len), CONFIGS[config])))
        return
    model = build_model(Path(tempfile.gettempdir()) / "vime-bench-dynbatch-model")
    rows = []
    for long_len in opts.longs:
        for name in CONFIGS:
            runs = []
            for _ in range(opts.repeats):
                done = subprocess.run(
                    [sys.executable, __file__, "--child", str(model), str(long_len), name],
                    capture_output=True, text=True, cwd=ROOT, env=os.environ | {"PYTHONWARNINGS": "ignore"},
                )  # fmt: skip
                runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
            row = {
                "long": long_len,
                "batching": name,
                "peak_growth_mib": statistics.median(r["peak_growth_mib"] for r in runs),
                "seconds": statistics.median(r["seconds"] for r in runs),
                "grad_norm": runs[0]["grad_norm"],
            }
            rows.append(row)
            print(f"long {long_len:5d}  {name:13s}  peak +{row['peak_growth_mib']:7.1f} MiB  "
                  f"{row['seconds']:6.2f} s  grad_norm {row['grad_norm']:.6f}", flush=True)  # fmt: skip
    head = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": platform.node(),
            "cpus": os.cpu_count(), "load": os.getloadavg(), "rows": rows}  # fmt: skip
    if opts.out:
        opts.out.write_text(json.dumps(head, indent=1))
    print(json.dumps({k: v for k, v in head.items() if k != "rows"}))


if __name__ == "__main__":
    main()
