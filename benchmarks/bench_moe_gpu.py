"""slime's run-qwen3-30B-A3B.sh on one H200: a cut Qwen3-30B-A3B trained by colocated GRPO through
train.py, and the MoE weight update measured against a device copy of the same bytes.

    python benchmarks/bench_moe_gpu.py --out DIR --phase prepare   # build the cut checkpoints (~2 min)
    python benchmarks/bench_moe_gpu.py --out DIR --phase train     # >= 5 GRPO steps via train.py (~6 min)
    python benchmarks/bench_moe_gpu.py --out DIR --phase sync      # update vs copy, greedy vs fresh (~5 min)
    python benchmarks/bench_moe_gpu.py --out DIR --dry-run         # the plan and train.py's argv, no GPU

The model is Qwen3-30B-A3B's published shape (hidden 2048, 32/4 heads of 128, 128 experts of 768,
top-8, vocab 151,936, untied) with random weights and the HF config cut to ``--layers`` layers (by
default the most that the GPU and the host hold: the colocated trainer keeps weights, fp32 gradients,
fp32 main weights and Adam moments on the GPU, 18 bytes per parameter, plus the frozen reference
(--use-kl-loss) and the engine's woken weights, 2 each; between steps all of it is offloaded to pinned
host memory, where --optimizer-cpu-offload keeps the optimizer: 36 bytes per parameter of host memory). The tokenizer is vime's tiny local one; the prompts are the synthetic arithmetic task.

train: the flags of slime's scripts/models/qwen3-30B-A3B.sh and scripts/run-qwen3-30B-A3B.sh as
vime-sync translates them, with the machine-bound ones changed (one GPU: tensor and expert parallel
1, one engine of one GPU; paths), the response length cut to ``--response-len`` (8192 for a random
model would spend the device time on the rollout), no eval (no AIME file), and ``--rm-type random``
(a random model never answers right, so deepscaler's reward would be 0 everywhere and GRPO would have
no signal). Reported per step from train.py's metrics: rollout / train / weight update / sleep-wake
seconds, tokens trained, MFU on active parameters (6 x active x tokens / train seconds / 989 TFLOP/s:
forward + backward of the policy update only; the old-policy and reference log-prob passes and the
recompute forward are not counted), the update's GiB/s; peak GPU memory from nvidia-smi (all
processes) sampled every 0.5 s; and a device-to-device copy of the update's bytes in the same run.

sync: one process builds the Megatron model (weights B) as the trainer does (DDP buffers), starts an
engine on A, and updates it in place through /vime/update_weights (the route train.py's ipc sync
uses): medians of 5 after a first call that records the copy plan, against the copy of the same
bytes; then the engine's greedy tokens and log-probs against a fresh engine started on B. Also the
export's own cost: building the plan and packing every tensor into buckets (the packed path).
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

GIB = 1024**3
H200_BF16_PEAK = 989.5e12  # dense bf16 FLOP/s of an H200 SXM
QWEN3_30B_A3B = dict(  # config.json of Qwen/Qwen3-30B-A3B (the fields that shape the model)
    hidden_size=2048,
    intermediate_size=6144,
    moe_intermediate_size=768,
    num_experts=128,
    num_experts_per_tok=8,
    norm_topk_prob=True,
    decoder_sparse_step=1,
    mlp_only_layers=[],
    num_attention_heads=32,
    num_key_value_heads=4,
    head_dim=128,
    vocab_size=151936,
    max_position_embeddings=40960,
    rms_norm_eps=1e-6,
    rope_theta=1000000.0,
    tie_word_embeddings=False,
)
GLM45_AIR = dict(  # config.json of zai-org/GLM-4.5-Air (106B-A12B), the fields that shape the model
    hidden_size=4096,
    intermediate_size=10944,
    moe_intermediate_size=1408,
    n_routed_experts=128,
    n_shared_experts=1,
    num_experts_per_tok=8,
    first_k_dense_replace=1,
    norm_topk_prob=True,
    routed_scaling_factor=1.0,
    n_group=1,
    topk_group=1,
    num_attention_heads=96,
    num_key_value_heads=8,
    head_dim=128,
    partial_rotary_factor=0.5,
    attention_bias=True,
    use_qk_norm=False,
    vocab_size=151552,
    max_position_embeddings=131072,
    rms_norm_eps=1e-5,
    rope_theta=1000000.0,
    tie_word_embeddings=False,
)
# model_type, published config, published layer count
FAMILIES = {
    "qwen3-30b-a3b": ("qwen3_moe", QWEN3_30B_A3B, 48),
    "glm45-air": ("glm4_moe", GLM45_AIR, 46),
}


def cut_config(family: str, layers: int, tokenizer) -> dict:
    from vime.utils.tiny_model import EOS_TOKEN, PAD_TOKEN

    eos, pad = tokenizer.convert_tokens_to_ids(EOS_TOKEN), tokenizer.convert_tokens_to_ids(PAD_TOKEN)
    published = FAMILIES[family][1]
    return dict(published, num_hidden_layers=layers, bos_token_id=eos, eos_token_id=eos, pad_token_id=pad)


def param_counts(family: str, layers: int) -> dict[str, int]:
    """Total and active (per token) parameters of the cut model, from vime's own shape record."""
    from vime.backends.megatron_utils.hf_config import shape_from_hf_config

    model_type, published, _ = FAMILIES[family]
    shape = shape_from_hf_config({"model_type": model_type, **dict(published, num_hidden_layers=layers)})
    return {"total": shape.num_params(), "active": shape.active_params()}


def host_and_gpu_bytes() -> tuple[int, int]:
    host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        import torch

        gpu = torch.cuda.get_device_properties(0).total_memory if torch.cuda.is_available() else 141 * 10**9
    except Exception:
        gpu = 141 * 10**9
    return host, gpu


def layers_that_fit(
    family: str, gpu_bytes: int, host_bytes: int, gpu_share: float = 0.8, host_share: float = 0.8
) -> dict:
    """The most layers whose colocated training fits: GPU 22 bytes/parameter at the weight update
    (trainer 18 + reference 2 + the engine's woken weights 2); host 36 bytes/parameter. The recipe
    passes --optimizer-cpu-offload, so fp32 main weights, gradients and Adam moments live in host
    memory beside the offloaded GPU state: the trainer process held 103.5 GB for 3.11 B parameters
    (33 bytes each) on the H200 when Ray's memory monitor killed a 4-layer run (2026-12-02), plus
    the engine's ~10 GB; Ray kills at 95 % of the host."""
    per_layer = param_counts(family, 3)["total"] - param_counts(family, 2)["total"]  # an MoE layer
    two = param_counts(family, 2)["total"]  # embeddings, output layer, norms and the first two layers
    by_gpu = int((gpu_share * gpu_bytes / 22 - two) // per_layer) + 2
    by_host = int((host_share * host_bytes / 36 - two) // per_layer) + 2
    return {
        "layers": max(1, min(by_gpu, by_host, FAMILIES[family][2])),
        "by_gpu": by_gpu,
        "by_host": by_host,
        "params_per_moe_layer": per_layer,
        "params_with_two_layers": two,
    }


def model_args(family: str, layers: int) -> list[str]:
    """slime's scripts/models/<model>.sh of the family, with the layer count cut."""
    if family == "glm45-air":  # glm4.5-106B-A12B.sh: N_DENSE_LAYERS=1, N_MOE_LAYERS cut
        return [
            "--disable-bias-linear", "--group-query-attention", "--num-attention-heads", "96",
            "--num-query-groups", "8", "--kv-channels", "128", "--num-layers", str(layers),
            "--hidden-size", "4096", "--ffn-hidden-size", "10944", "--add-qkv-bias", "--normalization", "RMSNorm",
            "--position-embedding-type", "rope", "--rotary-percent", "0.5", "--swiglu",
            "--untie-embeddings-and-output-weights", "--vocab-size", "151552", "--rotary-base", "1000000",
            "--moe-ffn-hidden-size", "1408", "--moe-shared-expert-intermediate-size", "1408",
            "--moe-router-pre-softmax", "--moe-router-score-function", "sigmoid", "--moe-router-enable-expert-bias",
            "--moe-router-bias-update-rate", "0", "--moe-router-load-balancing-type", "seq_aux_loss",
            "--moe-token-dispatcher-type", "alltoall", "--moe-router-topk", "8",
            "--moe-layer-freq", f"[0]*1+[1]*{layers - 1}", "--num-experts", "128", "--moe-grouped-gemm",
            "--moe-router-dtype", "fp32", "--moe-permute-fusion", "--moe-aux-loss-coeff", "0",
        ]  # fmt: skip
    return [  # qwen3-30B-A3B.sh (NLAYERS cut)
        "--disable-bias-linear", "--qk-layernorm", "--group-query-attention",
        "--num-attention-heads", "32", "--num-query-groups", "4", "--kv-channels", "128",
        "--num-layers", str(layers), "--hidden-size", "2048", "--ffn-hidden-size", "6144",
        "--normalization", "RMSNorm", "--position-embedding-type", "rope", "--norm-epsilon", "1e-6",
        "--rotary-percent", "1.0", "--swiglu", "--untie-embeddings-and-output-weights",
        "--vocab-size", "151936", "--rotary-base", "1000000",
        "--moe-ffn-hidden-size", "768", "--moe-router-score-function", "softmax",
        "--moe-token-dispatcher-type", "alltoall", "--moe-router-topk", "8",
        "--moe-layer-freq", "[" + ",".join(["1"] * layers) + "]", "--num-experts", "128",
        "--moe-grouped-gemm", "--moe-token-drop-policy", "probs", "--moe-router-dtype", "fp32",
        "--moe-permute-fusion", "--moe-aux-loss-coeff", "0",
    ]  # fmt: skip


def train_argv(
    family: str, layers: int, model: Path, data: Path, out: Path, steps: int, response_len: int
) -> list[str]:
    """train.py's flags: slime's run-qwen3-30B-A3B.sh as translated, with the model flags of the
    family's scripts/models file; machine-bound ones changed."""
    ckpt_args = ["--hf-checkpoint", str(model)]  # no --load/--save: nothing to resume, no disk to spare
    rollout_args = [
        "--prompt-data", str(data), "--input-key", "input", "--label-key", "label",
        "--apply-chat-template", "--rollout-shuffle", "--rm-type", "random",
        "--num-rollout", str(steps), "--rollout-batch-size", "32", "--n-samples-per-prompt", "8",
        "--rollout-max-response-len", str(response_len), "--rollout-temperature", "1",
        "--global-batch-size", "256", "--balance-data",
    ]  # fmt: skip
    perf_args = [
        "--tensor-model-parallel-size", "1", "--sequence-parallel", "--pipeline-model-parallel-size", "1",
        "--context-parallel-size", "1", "--expert-model-parallel-size", "1", "--expert-tensor-parallel-size", "1",
        "--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1",
        "--use-dynamic-batch-size", "--max-tokens-per-gpu", "8192",
    ]  # fmt: skip
    grpo_args = [
        "--advantage-estimator", "grpo", "--use-kl-loss", "--kl-loss-coef", "0.00", "--kl-loss-type", "low_var_kl",
        "--entropy-coef", "0.00", "--eps-clip", "0.2", "--eps-clip-high", "0.28",
    ]  # fmt: skip
    optimizer_args = [
        "--optimizer", "adam", "--lr", "1e-6", "--lr-decay-style", "constant", "--weight-decay", "0.1",
        "--adam-beta1", "0.9", "--adam-beta2", "0.98",
        "--optimizer-cpu-offload", "--overlap-cpu-optimizer-d2h-h2d", "--use-precision-aware-optimizer",
    ]  # fmt: skip
    engine_args = [  # SGLANG_ARGS translated: one engine of one GPU, eager (no CUDA-graph capture)
        "--rollout-num-gpus-per-engine", "1", "--vllm-gpu-memory-utilization", "0.15", "--vllm-enforce-eager",
        "--vllm-max-model-len", "2048",
    ]  # fmt: skip
    misc_args = [
        "--attention-dropout", "0.0", "--hidden-dropout", "0.0", "--accumulate-allreduce-grads-in-fp32",
        "--attention-softmax-in-fp32", "--attention-backend", "flash",
    ]  # fmt: skip
    run_args = [
        "--train-backend", "megatron", "--actor-num-nodes", "1", "--actor-num-gpus-per-node", "1", "--colocate",
        "--metrics-jsonl", str(out / "grpo_moe.jsonl"),
        "--save-debug-rollout-data", str(out / "rollout_{rollout_id}.pkl"),
    ]  # fmt: skip
    return [
        *run_args, *model_args(family, layers), *ckpt_args, *rollout_args, *optimizer_args, *grpo_args, *perf_args,
        *engine_args, *misc_args,
    ]  # fmt: skip


class GpuMemorySampler:
    """nvidia-smi's used memory of GPU 0 (all processes) every ``period`` seconds, in a thread."""

    def __init__(self, period: float = 0.5):
        self.period, self.samples = period, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            done = subprocess.run(
                ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
                capture_output=True,
                text=True,
            )
            if done.returncode == 0 and done.stdout.strip():
                self.samples.append((time.time(), float(done.stdout.split()[0])))
            self._stop.wait(self.period)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    @property
    def peak_mib(self) -> float:
        return max((m for _, m in self.samples), default=float("nan"))


def prepare(family: str, work: Path, layers: int) -> dict:
    """Checkpoints A (seed 0) and B (seed 1) of the cut shape, bf16, with the tiny tokenizer; the data."""
    import torch
    from transformers import Glm4MoeConfig, Glm4MoeForCausalLM, Qwen3MoeConfig, Qwen3MoeForCausalLM

    from vime.rollout.synthetic import write_arithmetic_dataset
    from vime.utils.tiny_model import build_tokenizer

    tok = build_tokenizer(work / "tokenizer")
    out: dict = {"family": family, "layers": layers}
    glm = family == "glm45-air"
    config_cls, model_cls = (
        (Glm4MoeConfig, Glm4MoeForCausalLM) if glm else (Qwen3MoeConfig, Qwen3MoeForCausalLM)
    )
    for name, seed in (("model_a", 0), ("model_b", 1)):
        dest = work / name
        if (dest / "config.json").exists():
            continue
        started = time.perf_counter()
        torch.manual_seed(seed)
        with torch.device("cuda"):
            model = model_cls(config_cls(**cut_config(family, layers, tok), dtype="bfloat16"))
        model = model.to(torch.bfloat16)
        model.save_pretrained(str(dest), safe_serialization=True)
        tok.save_pretrained(str(dest))
        del model
        torch.cuda.empty_cache()
        out[f"{name}_s"] = time.perf_counter() - started
    write_arithmetic_dataset(work / "arithmetic.jsonl", 4096, seed=0, max_operand=50, operators="+-")
    return out


def d2d_copy(nbytes: int) -> dict:
    from bench_gpu_weight_sync import d2d_copy_gib_s

    return d2d_copy_gib_s(nbytes)


def run_train(family: str, work: Path, out: Path, steps: int, response_len: int, timeout: int) -> dict:
    layers = json.loads((work / "model_a" / "config.json").read_text())["num_hidden_layers"]
    flags = train_argv(family, layers, work / "model_a", work / "arithmetic.jsonl", out, steps, response_len)
    argv = [sys.executable, str(ROOT / "train.py"), *flags]
    (out / "train_argv.txt").write_text(" ".join(argv) + "\n")
    started = time.perf_counter()
    with GpuMemorySampler() as memory, open(out / "train_moe.log", "w") as log:
        try:  # a run cut by the timeout still reports the steps it finished
            rc = subprocess.run(
                argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=timeout
            ).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    result: dict = {
        "rc": rc,
        "wall_s": time.perf_counter() - started,
        "peak_gpu_mib": memory.peak_mib,
    }
    metrics = out / "grpo_moe.jsonl"
    records = [json.loads(line) for line in metrics.read_text().splitlines()] if metrics.exists() else []
    counts = param_counts(
        family, json.loads((work / "model_a" / "config.json").read_text())["num_hidden_layers"]
    )
    result["params"] = counts
    from vime.rollout.debug_data import load_rollout_data

    steps_out = []
    for record in records:
        step = record.get("step")
        row = {
            k: record.get(k)
            for k in record
            if k.startswith(("time/", "weight_sync/", "train/ppo_kl", "train/train_rollout"))
        }
        row["step"] = step
        try:
            data = load_rollout_data(str(out / "rollout_{rollout_id}.pkl"), step)
            row["tokens"] = sum(len(t) for t in data["tokens"])
            row["response_tokens"] = sum(data["response_lengths"])
        except (FileNotFoundError, ValueError, KeyError):
            row["tokens"] = None
        train_s = record.get("time/train")
        if row["tokens"] and train_s:
            row["mfu_active"] = 6 * counts["active"] * row["tokens"] / train_s / H200_BF16_PEAK
        update_s, nbytes = record.get("time/update_weights"), record.get("weight_sync/bytes")
        if update_s and nbytes:
            row["update_gib_s"] = nbytes / GIB / update_s
        steps_out.append(row)
    result["steps"] = steps_out
    sent = next((r.get("weight_sync/bytes") for r in records if r.get("weight_sync/bytes")), None)
    result["update_bytes"] = sent or 2 * counts["total"]
    result["d2d_copy"] = d2d_copy(int(result["update_bytes"]))
    later = [r for r in steps_out if r["step"] not in (None, 0)]
    if later:
        result["median_steps_1_on"] = {
            key: statistics.median(r[key] for r in later if r.get(key) is not None)
            for key in (
                "time/step",
                "time/rollout",
                "time/train",
                "time/update_weights",
                "tokens",
                "mfu_active",
                "update_gib_s",
            )
            if any(r.get(key) is not None for r in later)
        }
    return result


def run_sync(work: Path, out: Path, repeats: int) -> dict:
    """Trainer (Megatron, weights B, DDP buffers) -> engine on A, in place; then greedy vs a fresh engine on B."""
    import torch
    from bench_gpu_weight_sync import env_setup, greedy, start_engine, vime_updates

    from vime.backends.megatron_utils.hf_config import load_shape
    from vime.backends.megatron_utils.hf_io import load_hf_into_megatron
    from vime.backends.megatron_utils.model_builder import ParallelSizes, build_gpt_model
    from vime.backends.megatron_utils.parallel import init_megatron_parallel
    from vime.backends.megatron_utils.weight_export import WeightExporter, send_weights
    from vime.backends.vllm_utils.engine_client import EngineClient

    env_setup()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    init_megatron_parallel(ParallelSizes())
    result: dict = {}
    shape = load_shape(work / "model_b")
    started = time.perf_counter()
    model = build_gpt_model(shape, ParallelSizes(), dtype=torch.bfloat16)
    model.cuda()
    from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig

    ddp = DistributedDataParallel(  # parameters as views of contiguous buffers, as the trainer holds them
        config=model.config,
        ddp_config=DistributedDataParallelConfig(grad_reduce_in_fp32=True, use_distributed_optimizer=True),
        module=model,
    )
    load_hf_into_megatron(ddp, work / "model_b", shape)
    result["trainer_build_and_load_s"] = time.perf_counter() - started
    started = time.perf_counter()
    exporter = WeightExporter(ddp, shape)
    result["exporter_init_s"] = time.perf_counter() - started  # plan + zero-copy views
    views = exporter.in_place()
    nbytes = sum(t.numel() * t.element_size() for _, t in views)
    result["tensors"] = len(views)
    result["expert_tensors"] = sum(".mlp.experts." in n for n, _ in views)
    result["bytes"] = nbytes
    result["d2d_copy"] = d2d_copy(nbytes)

    class NullSink:
        def begin(self, plan):
            pass

        def send(self, metas, flat):
            pass

        def finish(self):
            torch.cuda.synchronize()

    packs = []
    for _ in range(4):  # the packed path's own cost: a copy per tensor into the buckets (the first warms up)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        send_weights(
            exporter.tensors(),
            exporter.plan,
            NullSink(),
            buffers=exporter.buffers,
            packer=exporter.packer,
            progress=False,
        )
        packs.append(time.perf_counter() - t0)
    result["pack_all_buckets_s"] = statistics.median(packs[1:])
    result["pack_us_per_tensor"] = result["pack_all_buckets_s"] / len(views) * 1e6
    exporter.buffers[:] = [None, None]
    torch.cuda.empty_cache()

    port = 18100
    server, seconds = start_engine(work / "model_a", port, out / "engine_a.log", ["--enable-sleep-mode"])
    result["engine_start_s"] = seconds
    client = EngineClient(f"http://127.0.0.1:{port}")
    try:
        result["greedy_a"] = greedy(client)
        result["vime_in_place"] = vime_updates(client, views, repeats, keep=False)
        result["greedy_after_update"] = greedy(client)
    finally:
        server.stop()
    time.sleep(2)
    fresh, seconds = start_engine(work / "model_b", port + 1, out / "engine_b.log", [])
    try:
        result["greedy_fresh_b"] = greedy(EngineClient(f"http://127.0.0.1:{port + 1}"))
    finally:
        fresh.stop()
    got, want = result["greedy_after_update"], result["greedy_fresh_b"]
    result["vs_fresh_engine"] = {
        "tokens_equal": all(a["token_ids"] == b["token_ids"] for a, b in zip(got, want, strict=True)),
        "max_abs_logprob_diff": max(
            abs(x - y)
            for a, b in zip(got, want, strict=True)
            for x, y in zip(a["logprobs"], b["logprobs"], strict=True)
        ),
        "changed_from_a": any(
            a["token_ids"] != b["token_ids"] for a, b in zip(result["greedy_a"], got, strict=True)
        ),
    }
    update = result["vime_in_place"]["seconds_median"]
    result["update_share_of_copy_rate"] = result["d2d_copy"]["seconds"] / update
    return result


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--out", required=True)
    cli.add_argument("--phase", choices=["prepare", "train", "sync"], default=None)
    cli.add_argument("--family", choices=sorted(FAMILIES), default="qwen3-30b-a3b")
    cli.add_argument(
        "--work", default=None, help="where the cut checkpoints live (default /tmp/bench_moe_<family>)"
    )
    cli.add_argument(
        "--layers", type=int, default=None, help="default: the most that fit (see the docstring)"
    )
    cli.add_argument("--steps", type=int, default=6)
    cli.add_argument("--response-len", type=int, default=512)
    cli.add_argument("--repeats", type=int, default=5)
    cli.add_argument("--timeout", type=int, default=560, help="seconds train.py may take")
    cli.add_argument(
        "--dry-run", action="store_true", help="print the plan and train.py's argv; no GPU needed"
    )
    opts = cli.parse_args()
    out, work = Path(opts.out), Path(opts.work or f"/tmp/bench_moe_{opts.family}")
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    host, gpu = host_and_gpu_bytes()
    fit = layers_that_fit(opts.family, gpu, host)
    layers = opts.layers or fit["layers"]
    plan = {
        "family": opts.family,
        "host_bytes": host,
        "gpu_bytes": gpu,
        "fit": fit,
        "layers": layers,
        "params": param_counts(opts.family, layers),
    }
    print(json.dumps(plan, indent=1))
    if opts.dry_run:
        data = work / "arithmetic.jsonl"
        print(
            " ".join(
                train_argv(opts.family, layers, work / "model_a", data, out, opts.steps, opts.response_len)
            )
        )
        return
    if opts.phase is None:
        cli.error("give --phase prepare|train|sync (or --dry-run)")
    result = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "plan": plan}
    if opts.phase == "prepare":
        result["prepare"] = prepare(opts.family, work, layers)
    elif opts.phase == "train":
        result["train"] = run_train(opts.family, work, out, opts.steps, opts.response_len, opts.timeout)
    else:
        result["sync"] = run_sync(work, out, opts.repeats)
    (out / f"moe_{opts.family}_{opts.phase}.json").write_text(
        json.dumps(result, indent=1, default=str) + "\n"
    )
    print(json.dumps({k: v for k, v in result.items() if k != "plan"}, indent=1, default=str)[:20000])


if __name__ == "__main__":
    main()
