"""Colocated weight sync on one GPU: CUDA IPC into a running vLLM engine vs. disk vs. the copy ceiling.

    python benchmarks/bench_gpu_weight_sync.py --out DIR [--repeats 5] [--bucket-mb 512]

Needs an NVIDIA GPU and a CUDA vLLM (0.26 was the one run: docs/rollout.md). One process plays the
trainer: it builds a Qwen2-1.5B-shaped bf16 model (random init, seed 1: weights "B") on the GPU and
starts one engine on the same GPU from another random model ("A", seed 0) with sleep mode and
``--weight-transfer-config '{"backend": "ipc"}'``. Measured in the same run, each a median:

- the device-to-device copy rate of the same bytes (torch ``copy_``; the ceiling of any update);
- IPC update end to end through ``push_weights`` (pause → buckets → reset prefix cache → resume), once
  through vLLM's weight-transfer routes and once through vime's worker extension over /collective_rpc;
  a bucket-size sweep of the first;
- disk: write B as safetensors (to /dev/shm) and reload it through /collective_rpc, same phases;
- sleep/wake: GPU memory before/after ``/sleep`` (levels 1 and 2), time to wake weights, time to wake
  the KV cache, and the full colocated cycle at level 2 (wake weights → IPC update → wake KV cache);
- correctness: after the update, the engine's greedy tokens and log-probs against the trainer's own
  forward (HF, bf16) and against an engine started fresh from B; and the step-0 ``ppo_kl`` (mean of
  rollout minus trainer log-prob on sampled tokens).

Results: DIR/weight_sync.json (and the server logs); a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vime.backends.megatron_utils.buckets import plan_buckets, specs_of
from vime.backends.megatron_utils.weight_export import send_weights
from vime.backends.vllm_utils.engine_client import EngineClient
from vime.backends.vllm_utils.ipc_views import VimeIpcSink
from vime.backends.vllm_utils.server_process import ServerProcess, build_server_command
from vime.backends.vllm_utils.weight_transfer import IpcBucketSink, push_weights

GIB = 1024**3
QWEN2_1_5B = dict(
    hidden_size=1536,
    intermediate_size=8960,
    num_hidden_layers=28,
    num_attention_heads=12,
    num_key_value_heads=2,
    vocab_size=151936,
    max_position_embeddings=4096,
    rms_norm_eps=1e-6,
    tie_word_embeddings=True,
)
INIT_RANGE = 0.1  # peakier random logits than HF's 0.02: greedy ties are rare (--init-range)
PROMPTS = [[(i * 37 + j * 11) % 500 + 3 for j in range(24)] for i in range(4)]


def env_setup() -> None:
    for k, v in {
        "VLLM_USE_FLASHINFER_SAMPLER": "0",
        "VLLM_SERVER_DEV_MODE": "1",
        "VLLM_ALLOW_INSECURE_SERIALIZATION": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "NCCL_NVLS_ENABLE": "0",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
        "NVSHMEM_DISABLE_NVLS": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }.items():
        os.environ.setdefault(k, v)


def gpu_used_mib() -> float:
    """Used memory of GPU 0 as nvidia-smi reports it (all processes, the engine's included)."""
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(out.strip().splitlines()[0])


def build_model(seed: int, dest: Path | None, tokenizer_dir: Path, init_range: float = INIT_RANGE):
    """A Qwen2-1.5B-shaped bf16 model with random weights on the GPU; saved to ``dest`` when given."""
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    from vime.utils.tiny_model import EOS_TOKEN, PAD_TOKEN

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = Qwen2Config(
        **QWEN2_1_5B,
        initializer_range=init_range,
        bos_token_id=tok.convert_tokens_to_ids(EOS_TOKEN),
        eos_token_id=tok.convert_tokens_to_ids(EOS_TOKEN),
        pad_token_id=tok.convert_tokens_to_ids(PAD_TOKEN),
        dtype="bfloat16",
    )
    torch.manual_seed(seed)
    with torch.device("cuda"):
        model = Qwen2ForCausalLM(config).to(torch.bfloat16).eval()
    if dest is not None:
        model.save_pretrained(str(dest), safe_serialization=True)
        tok.save_pretrained(str(dest))
    return model


def named_weights(model) -> list[tuple[str, torch.Tensor]]:
    """What the trainer sends: HF names, the tied lm_head left out (the engine ties it itself)."""
    return [(k, v.detach()) for k, v in model.state_dict().items() if k != "lm_head.weight"]


def d2d_copy_gib_s(nbytes: int, repeats: int = 10) -> dict:
    src = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    times = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        dst.copy_(src)
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / 1000)
    assert torch.equal(src[-1000:], dst[-1000:])
    del src, dst
    torch.cuda.empty_cache()
    med = statistics.median(times)
    return {"seconds": med, "gib_s": nbytes / GIB / med, "gib_s_read_plus_write": 2 * nbytes / GIB / med}


def greedy(client: EngineClient, prompts=PROMPTS, tokens: int = 16) -> list[dict]:
    params = {"max_tokens": tokens, "temperature": 0.0, "logprobs": 0, "ignore_eos": True}
    out = []
    for p in prompts:
        choice = client.generate(p, params)["choices"][0]
        lps = [float(c["logprob"]) for c in (choice.get("logprobs") or {}).get("content") or []]
        out.append({"token_ids": choice["token_ids"], "logprobs": lps})
    return out


def sample(client: EngineClient, n: int = 8, tokens: int = 32) -> list[dict]:
    params = {"max_tokens": tokens, "temperature": 1.0, "logprobs": 0, "ignore_eos": True, "seed": 7}
    out = []
    for i in range(n):
        prompt = PROMPTS[i % len(PROMPTS)]
        choice = client.generate(prompt, dict(params, seed=7 + i))["choices"][0]
        lps = [float(c["logprob"]) for c in (choice.get("logprobs") or {}).get("content") or []]
        out.append({"prompt": prompt, "token_ids": choice["token_ids"], "logprobs": lps})
    return out


@torch.no_grad()
def trainer_logprobs(model, prompt: list[int], response: list[int]) -> list[float]:
    ids = torch.tensor([prompt + response], device="cuda")
    logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()
    lp = torch.log_softmax(logits, -1)
    return lp.gather(-1, torch.tensor(response, device="cuda")[:, None])[:, 0].tolist()


def compare_with_trainer(model, results: list[dict], prompts=PROMPTS) -> dict:
    diffs, argmax_equal, total = [], 0, 0
    for prompt, r in zip(prompts, results, strict=True):
        ids = torch.tensor([prompt + r["token_ids"]], device="cuda")
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()
        lp = torch.log_softmax(logits, -1)
        chosen = lp.gather(-1, torch.tensor(r["token_ids"], device="cuda")[:, None])[:, 0]
        diffs += (chosen - torch.tensor(r["logprobs"], device="cuda")).abs().tolist()
        argmax_equal += int((logits.argmax(-1).cpu() == torch.tensor(r["token_ids"])).sum())
        total += len(r["token_ids"])
    return {
        "max_abs_logprob_diff": max(diffs),
        "mean_abs_logprob_diff": sum(diffs) / len(diffs),
        "trainer_argmax_equals_engine_greedy": argmax_equal / total,
    }


def ppo_kl(model, samples: list[dict]) -> dict:
    """Step 0: rollout (engine) vs trainer log-probs of the same sampled tokens."""
    deltas = []
    for s in samples:
        train = trainer_logprobs(model, s["prompt"], s["token_ids"])
        deltas += [r - t for r, t in zip(s["logprobs"], train, strict=True)]
    k1 = sum(deltas) / len(deltas)
    k3 = sum((torch.tensor(d).exp() - 1 - d).item() for d in deltas) / len(deltas)
    return {"ppo_kl_k1": k1, "ppo_kl_k3": k3, "max_abs": max(abs(d) for d in deltas), "tokens": len(deltas)}


def start_engine(model_dir: Path, port: int, log: Path, extra: list[str]) -> tuple[ServerProcess, float]:
    cmd = build_server_command(
        str(model_dir),
        "127.0.0.1",
        port,
        ["--enforce-eager", "--gpu-memory-utilization", "0.5", "--max-model-len", "2048", *extra],
    )
    server = ServerProcess(cmd, log, env=dict(os.environ))
    started = time.perf_counter()
    server.start()
    server.wait_healthy(f"http://127.0.0.1:{port}", 600)
    return server, time.perf_counter() - started


def ipc_updates(client, weights, bucket_bytes: int, api: str, repeats: int) -> dict:
    plan = plan_buckets(specs_of(weights), bucket_bytes)
    sink = IpcBucketSink([client], api)
    buffers: list = [None, None]
    runs = []
    for i in range(repeats + 1):  # the first is a warm-up
        started = time.perf_counter()
        phases = push_weights(
            [client],
            lambda: send_weights(iter(weights), plan, sink, progress=False, buffers=buffers),
            version=str(i),
        )
        total = time.perf_counter() - started
        if i:
            runs.append(phases | {"total": total})
    nbytes = sum(t.numel() * t.element_size() for _, t in weights)
    med = statistics.median(r["total"] for r in runs)
    send = statistics.median(r["send"] for r in runs)
    buffers.clear()
    torch.cuda.empty_cache()
    return {
        "api": api,
        "bucket_mib": bucket_bytes >> 20,
        "buckets": len(plan),
        "bytes": nbytes,
        "seconds_median": med,
        "gib_s_end_to_end": nbytes / GIB / med,
        "send_seconds_median": send,
        "gib_s_send_only": nbytes / GIB / send,
        "runs": runs,
    }


def in_one_buffer(weights: list[tuple[str, torch.Tensor]]) -> list[tuple[str, torch.Tensor]]:
    """The same weights as views of one contiguous buffer, as a Megatron trainer's (DDP's) parameters are."""
    total = sum(t.numel() * t.element_size() for _, t in weights)
    arena = torch.empty(total, dtype=torch.uint8, device="cuda")
    out, offset = [], 0
    for name, t in weights:
        n = t.numel() * t.element_size()
        view = arena[offset : offset + n].view(t.dtype).view(t.shape)
        view.copy_(t)
        out.append((name, view))
        offset += n
    return out


def server_medians(runs: list[dict]) -> dict[str, float]:
    """Median of each of the servers' own phase times (``server_*``) over ``runs``."""
    return {k: statistics.median(r[k] for r in runs) for k in runs[0] if k.startswith("server_")}


def vime_updates(client, weights, repeats: int, keep: bool, bucket_bytes: int | None = None) -> dict:
    """Through /vime/update_weights: in place (``bucket_bytes`` None) or packed into buckets first."""
    sink = VimeIpcSink([client], keep=keep, pause_mode="abort")
    plan = plan_buckets(specs_of(weights), bucket_bytes) if bucket_bytes else None
    buffers: list = [None, None]

    def send() -> None:
        if plan is None:
            sink.send_views(weights)
        else:
            send_weights(iter(weights), plan, sink, progress=False, buffers=buffers)

    runs, results = [], []
    for i in range(repeats + 1):  # the first records the copy plan
        torch.cuda.synchronize()
        started = time.perf_counter()
        phases = push_weights([client], send, version=str(i), pause_mode="abort", sink=sink)
        total = time.perf_counter() - started
        results.append([a["results"][0] for a in sink.answers])
        if i:
            runs.append(phases | {"total": total})
    sink.close()
    buffers.clear()
    torch.cuda.empty_cache()
    nbytes = sum(t.numel() * t.element_size() for _, t in weights)
    med = statistics.median(r["total"] for r in runs)
    return {
        "keep": keep,
        "in_place": plan is None,
        "bucket_mib": (bucket_bytes or 0) >> 20,
        "calls": 1 if plan is None else len(plan),
        "source_storages": len({t.untyped_storage().data_ptr() for _, t in weights}),
        "bytes": nbytes,
        "seconds_median": med,
        "gib_s_end_to_end": nbytes / GIB / med,
        "server_medians": server_medians(runs),
        "first_call": results[0],
        "last_call": results[-1],
        "runs": runs,
    }


def asleep_update(client, weights, repeats: int) -> dict:
    """The colocated cycle's update: engine asleep at level 2, weights woken, in-place update, KV woken."""
    sink = VimeIpcSink([client], keep=True, pause_mode="abort")
    runs = []
    for i in range(repeats + 1):
        client.sleep(2)
        client.wake_up(["weights"])
        torch.cuda.synchronize()
        started = time.perf_counter()
        phases = push_weights([client], lambda: sink.send_views(weights), version=f"s{i}", sink=sink)
        update = time.perf_counter() - started
        paused = sink.answers[-1]["paused"]
        mark = time.perf_counter()
        client.wake_up(["kv_cache"])
        if i:
            runs.append(phases | {"total": update, "wake_kv": time.perf_counter() - mark, "paused": paused})
    sink.close()
    nbytes = sum(t.numel() * t.element_size() for _, t in weights)
    med = statistics.median(r["total"] for r in runs)
    return {
        "seconds_median": med,
        "gib_s_end_to_end": nbytes / GIB / med,
        "server_medians": server_medians(runs),
        "runs": runs,
    }


def disk_updates(client, model, dest: Path, repeats: int) -> dict:
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        model.save_pretrained(str(dest), safe_serialization=True)
        written = time.perf_counter() - started
        client.update_weights_from_disk(str(dest))
        runs.append({"write": written, "reload": time.perf_counter() - started - written})
        runs[-1]["total"] = time.perf_counter() - started
    return {
        "seconds_median": statistics.median(r["total"] for r in runs),
        "write_median": statistics.median(r["write"] for r in runs),
        "reload_median": statistics.median(r["reload"] for r in runs),
        "runs": runs,
        "dest": str(dest),
    }


def sleep_cycle(client, level: int, update=None) -> dict:
    """Memory and times of one sleep → wake(weights) → [update] → wake(kv_cache) → first answer."""
    out: dict = {"level": level, "mib_before": gpu_used_mib()}
    t = time.perf_counter()
    client.sleep(level)
    out["sleep_s"] = time.perf_counter() - t
    time.sleep(0.5)
    out["mib_asleep"] = gpu_used_mib()
    t = time.perf_counter()
    client.wake_up(["weights"])
    out["wake_weights_s"] = time.perf_counter() - t
    out["mib_weights_awake"] = gpu_used_mib()
    if update is not None:
        t = time.perf_counter()
        update()
        out["update_s"] = time.perf_counter() - t
    t = time.perf_counter()
    client.wake_up(["kv_cache"])
    out["wake_kv_s"] = time.perf_counter() - t
    t = time.perf_counter()
    client.generate(PROMPTS[0], {"max_tokens": 1, "temperature": 0.0})
    out["first_answer_s"] = time.perf_counter() - t
    out["mib_awake"] = gpu_used_mib()
    return out


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--out", required=True)
    cli.add_argument("--repeats", type=int, default=5)
    cli.add_argument("--bucket-mb", type=int, default=512)
    cli.add_argument("--sweep", default="128,1024,2048", help="more bucket sizes (MiB) for the IPC route")
    cli.add_argument("--budget", type=float, default=520, help="seconds; later sections are skipped past it")
    cli.add_argument("--no-fresh-engine", action="store_true")
    cli.add_argument("--init-range", type=float, default=INIT_RANGE, help="std of the random init")
    cli.add_argument("--skip", default="", help="comma-separated sections to leave out (e.g. disk,sweep_128)")
    opts = cli.parse_args()
    env_setup()
    t0 = time.perf_counter()
    out_dir = Path(opts.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    work = Path("/tmp/bench_gpu_ws")
    work.mkdir(parents=True, exist_ok=True)
    result: dict = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "errors": {}}
    json_path = out_dir / "weight_sync.json"

    def save() -> None:
        json_path.write_text(json.dumps(result, indent=2, default=str) + "\n")

    skipped = set(filter(None, opts.skip.split(",")))

    def section(name: str, fn, *a, **kw):
        if name in skipped:
            return None
        if time.perf_counter() - t0 > opts.budget:
            result["errors"][name] = "skipped: over the time budget"
            save()
            return None
        started = time.perf_counter()
        try:
            value = fn(*a, **kw)
            result[name] = value
            print(
                f"[{time.perf_counter() - t0:6.1f}s] {name}: done in {time.perf_counter() - started:.1f}s",
                flush=True,
            )
            return value
        except Exception as exc:  # a failed section is recorded, the rest still runs
            result["errors"][name] = f"{type(exc).__name__}: {exc}"[:2000]
            traceback.print_exc()
            return None
        finally:
            save()

    import vllm

    from vime.utils.tiny_model import build_tokenizer

    result["versions"] = {"vllm": vllm.__version__, "torch": torch.__version__}
    result["gpu"] = torch.cuda.get_device_name(0)
    tok_dir = work / "tokenizer"
    build_tokenizer(tok_dir)
    dir_a, dir_b = work / "model_a", work / "model_b"
    result["init_range"] = opts.init_range
    section("build_a", lambda: (build_model(0, dir_a, tok_dir, opts.init_range), None)[1])
    torch.cuda.empty_cache()
    model_b = build_model(1, dir_b, tok_dir, opts.init_range)
    weights = named_weights(model_b)
    nbytes = sum(t.numel() * t.element_size() for _, t in weights)
    result["model"] = {
        "shape": QWEN2_1_5B,
        "bytes_sent": nbytes,
        "gib": nbytes / GIB,
        "tensors": len(weights),
    }
    section("d2d_copy", d2d_copy_gib_s, nbytes)
    result["mib_before_engine"] = gpu_used_mib()

    port = 18000
    server, seconds = start_engine(
        dir_a,
        port,
        out_dir / "engine_a.log",
        ["--enable-sleep-mode", "--weight-transfer-config", '{"backend": "ipc"}'],
    )
    result["engine_start_s"] = seconds
    client = EngineClient(f"http://127.0.0.1:{port}")
    try:
        result["routes"] = sorted(client.routes())
        result["mib_engine_up"] = gpu_used_mib()
        section("greedy_a", greedy, client)
        bucket = opts.bucket_mb << 20
        section("ipc_weight_transfer", ipc_updates, client, weights, bucket, "weight-transfer", opts.repeats)
        section("greedy_b_ipc", greedy, client)
        section("vs_trainer", compare_with_trainer, model_b, result.get("greedy_b_ipc") or [])
        section("ppo_kl_step0", lambda: ppo_kl(model_b, sample(client)))
        section("ipc_collective_rpc", ipc_updates, client, weights, bucket, "collective-rpc", opts.repeats)
        section("greedy_b_rpc", greedy, client)
        section("vime_in_place_kept", vime_updates, client, weights, opts.repeats, True)
        section("greedy_b_vime", greedy, client)
        arena = in_one_buffer(weights)
        section("vime_in_place_one_buffer", vime_updates, client, arena, opts.repeats, False)
        section("vime_in_place_one_buffer_kept", vime_updates, client, arena, opts.repeats, True)
        section("vime_packed_512", vime_updates, client, weights, opts.repeats, True, bucket)
        section("vime_packed_whole", vime_updates, client, weights, opts.repeats, True, 4 * GIB)
        section("vime_asleep_cycle", asleep_update, client, arena, opts.repeats)
        section("greedy_b_vime_cycle", greedy, client)
        del arena
        torch.cuda.empty_cache()
        sweep = {}
        for mib in [int(x) for x in opts.sweep.split(",") if x]:
            sweep[mib] = section(
                f"sweep_{mib}", ipc_updates, client, weights, mib << 20, "weight-transfer", 3
            )
        section("disk", disk_updates, client, model_b, Path("/dev/shm/vime_bench_b"), 3)
        section("greedy_b_disk", greedy, client)
        section("sleep_level1", sleep_cycle, client, 1)
        sink = IpcBucketSink([client], "weight-transfer")
        plan = plan_buckets(specs_of(weights), bucket)

        def update() -> None:
            push_weights([client], lambda: send_weights(iter(weights), plan, sink, progress=False))

        section("sleep_level2_cycle", sleep_cycle, client, 2, update)
        section("greedy_b_after_cycle", greedy, client)
    finally:
        server.stop()
    if not opts.no_fresh_engine:
        time.sleep(2)
        try:
            fresh, seconds = start_engine(dir_b, port + 1, out_dir / "engine_b.log", [])
            result["fresh_engine_start_s"] = seconds
            try:
                section("greedy_b_fresh", greedy, EngineClient(f"http://127.0.0.1:{port + 1}"))
            finally:
                fresh.stop()
        except Exception as exc:
            result["errors"]["fresh_engine"] = f"{type(exc).__name__}: {exc}"[:2000]
    fresh = result.get("greedy_b_fresh")
    checks = {}
    for key in (
        "greedy_b_ipc", "greedy_b_rpc", "greedy_b_vime", "greedy_b_vime_cycle", "greedy_b_disk",
        "greedy_b_after_cycle",
    ):  # fmt: skip
        got = result.get(key)
        if got and fresh:
            checks[key] = {
                "tokens_equal": all(
                    a["token_ids"] == b["token_ids"] for a, b in zip(got, fresh, strict=True)
                ),
                "max_abs_logprob_diff": max(
                    abs(x - y)
                    for a, b in zip(got, fresh, strict=True)
                    for x, y in zip(a["logprobs"], b["logprobs"], strict=True)
                ),
            }
    if result.get("greedy_a") and result.get("greedy_b_ipc"):
        checks["changed_from_a"] = any(
            a["token_ids"] != b["token_ids"]
            for a, b in zip(result["greedy_a"], result["greedy_b_ipc"], strict=True)
        )
    result["vs_fresh_engine"] = checks
    result["wall_s"] = time.perf_counter() - t0
    save()
    summary(result)


def summary(r: dict) -> None:
    def g(key, field, fmt="{:.3f}"):
        v = (r.get(key) or {}).get(field)
        return fmt.format(v) if isinstance(v, int | float) else "-"

    print(f"vLLM {r.get('versions')}, {r.get('gpu')}, model {g('model', 'gib', '{:.2f}')} GiB")
    print(f"d2d copy: {g('d2d_copy', 'seconds', '{:.4f}')} s, {g('d2d_copy', 'gib_s', '{:.0f}')} GiB/s")
    for key in ("ipc_weight_transfer", "ipc_collective_rpc", *[k for k in r if k.startswith("sweep_")]):
        print(
            f"{key:22s} bucket {g(key, 'bucket_mib', '{}')} MiB: {g(key, 'seconds_median')} s end to end "
            f"({g(key, 'gib_s_end_to_end', '{:.1f}')} GiB/s), send only {g(key, 'send_seconds_median')} s "
            f"({g(key, 'gib_s_send_only', '{:.1f}')} GiB/s)"
        )
    copy = (r.get("d2d_copy") or {}).get("seconds")
    for key in [k for k in r if k.startswith("vime_")]:
        v = r.get(key) or {}
        share = (
            f"{copy / v['seconds_median']:.1%} of the copy rate" if copy and v.get("seconds_median") else ""
        )
        print(
            f"{key:30s}: {g(key, 'seconds_median', '{:.4f}')} s end to end ({g(key, 'gib_s_end_to_end', '{:.0f}')} "
            f"GiB/s, {share}); server {v.get('server_medians')}"
        )
    print(
        f"disk: {g('disk', 'seconds_median')} s (write {g('disk', 'write_median')}, reload {g('disk', 'reload_median')})"
    )
    for key in ("sleep_level1", "sleep_level2_cycle"):
        print(f"{key}: {r.get(key)}")
    print(f"vs trainer: {r.get('vs_trainer')}; ppo_kl: {r.get('ppo_kl_step0')}")
    print(f"vs fresh engine: {r.get('vs_fresh_engine')}")
    print(f"errors: {r.get('errors')}")


if __name__ == "__main__":
    main()
