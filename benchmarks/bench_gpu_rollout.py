"""Rollout throughput on a GPU: vime's rollout function vs. direct requests to the same CUDA vLLM engine.

    python benchmarks/bench_gpu_rollout.py --out DIR [--prompts 64] [--n 8] [--tokens 128] [--repeats 5]

The GPU twin of bench_rollout.py (same three paths, same alternating order, same fixed-length answers):
one engine on the GPU behind vllm-router, the tiny local model. Writes DIR/rollout_gpu.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ray
from bench_rollout import _direct, _prompts
from transformers import AutoTokenizer

from vime.rollout.data_source import make_data_source
from vime.rollout.generate import build_sampling_params
from vime.rollout.vllm_rollout import generate_rollout
from vime.utils.arguments import parse_args
from vime.utils.http_utils import run
from vime.utils.tiny_model import build_tiny_model


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
    work = Path(tempfile.mkdtemp(prefix="bench_gpu_rollout_"))
    model = build_tiny_model(work / "model", seed=0)
    _prompts(work / "prompts.jsonl", opts.prompts)
    args = parse_args(
        [
            "--hf-checkpoint", str(model), "--prompt-data", str(work / "prompts.jsonl"),
            "--input-key", "input", "--label-key", "label", "--apply-chat-template", "--rm-type", "math",
            "--rollout-batch-size", str(opts.prompts), "--n-samples-per-prompt", str(opts.n),
            "--num-rollout", "1", "--rollout-max-response-len", str(opts.tokens),
            "--custom-generate-function-path", "bench_rollout.fixed_length_generate",
            "--rollout-num-gpus", "1", "--rollout-num-engines", "1", "--debug-rollout-only", "--weight-sync", "disk",
            "--vllm-max-model-len", "512", "--vllm-enforce-eager", "--vllm-gpu-memory-utilization", "0.3",
        ]
    )  # fmt: skip
    args.vllm_log_dir = str(out / "logs")
    ray.init(num_cpus=8, include_dashboard=False, logging_level=logging.WARNING)
    from vime.ray.rollout_manager import LocalRolloutManager

    manager = LocalRolloutManager(args)
    try:
        engine_url = manager.engine_urls()[0]
        tokenizer = AutoTokenizer.from_pretrained(model)
        rows = [json.loads(line) for line in (work / "prompts.jsonl").read_text().splitlines()]
        chats = [[{"role": "user", "content": r["input"]}] for r in rows]
        texts = [tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in chats]
        token_ids = [tokenizer.encode(t, add_special_tokens=False) for t in texts for _ in range(opts.n)]
        params = dict(build_sampling_params(args), ignore_eos=True)
        concurrency = int(args.vllm_server_concurrency)
        generate_rollout(args, 0, make_data_source(args))  # warm-up
        rates: dict[str, list[float]] = {"direct": [], "router": [], "vime": []}
        order = ["vime", "direct", "router"]
        for repeat in range(opts.repeats):
            for which in order[repeat % 3 :] + order[: repeat % 3]:
                started = time.perf_counter()
                if which == "vime":
                    result = generate_rollout(args, repeat + 1, make_data_source(args))
                    tokens = sum(s.response_length for g in result.samples for s in g)
                else:
                    url = engine_url if which == "direct" else manager.router_url()
                    tokens = run(_direct(url, token_ids, params, concurrency))
                rates[which].append(tokens / (time.perf_counter() - started))
    finally:
        manager.dispose()
        ray.shutdown()
    medians = {k: statistics.median(v) for k, v in rates.items()}
    report = {
        "workload": vars(opts),
        "concurrency": concurrency,
        "tokens_per_s": rates,
        "median_tokens_per_s": medians,
        "vime_overhead_vs_direct": 1 - medians["vime"] / medians["direct"],
        "router_overhead_vs_direct": 1 - medians["router"] / medians["direct"],
    }
    (out / "rollout_gpu.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "tokens_per_s"}, indent=1))


if __name__ == "__main__":
    main()
