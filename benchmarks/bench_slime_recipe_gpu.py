"""A slime recipe, as vime-sync translated it, run through train.py on one GPU.

    # here: capture the translated launch (nothing of slime's enters the repository)
    python benchmarks/bench_slime_scripts.py SLIME --rev 624b824a8 --scratch S --json S/verdicts.json --only run-qwen3-4B
    python benchmarks/bench_slime_recipe_gpu.py --from-verdicts S/verdicts.json --launch scripts/run-qwen3-4B.sh \\
        --save-argv .device-tools/run-qwen3-4B.argv.json
    # on the GPU machine (vLLM 0.26 bundle in /tmp/site, see shared/device/ship-vllm.md)
    python3 benchmarks/bench_slime_recipe_gpu.py --argv .device-tools/run-qwen3-4B.argv.json --out $OUT \\
        --work /tmp/recipe --steps 6 --response-len 512

The argument vector is the one the translated script passes to train.py, flag for flag, except the
machine-bound ones (``MACHINE_BOUND``): one GPU (tensor parallel 1, one engine of one GPU, one
training rank), paths (a Qwen3-4B-shaped checkpoint with random weights and vime's locally trained
tokenizer, built on the machine; a local arithmetic data set under the recipe's own keys), no
checkpoint saving (the device's disk is smaller than a 4B model's Adam state), the number of steps,
and the response length (8192 tokens of a random model would spend the device time in the
rollout). Each change is printed. Reported per step from train.py's metrics: rollout / train /
weight update / sleep-wake seconds, tokens trained, the train phase's MFU (6 x parameters x tokens /
train seconds / peak bf16 FLOP/s: forward and backward of the policy update only; the log-prob and
reference passes and the recompute forward are extra work not counted), and the peak GPU memory
(nvidia-smi, all processes, sampled every 0.5 s).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

H200_BF16_PEAK = 790e12  # dense bf16 matmul FLOP/s measured on the lent H200 (device KINDS.md)
QWEN3_4B = dict(  # config.json of Qwen/Qwen3-4B: the fields that shape the model
    model_type="qwen3",
    hidden_size=2560,
    intermediate_size=9728,
    num_hidden_layers=36,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=128,
    vocab_size=151936,
    rms_norm_eps=1e-6,
    rope_theta=1000000,
    max_position_embeddings=40960,
    tie_word_embeddings=True,
    attention_bias=False,
    hidden_act="silu",
)


def machine_bound(work: Path, out: Path, steps: int, response_len: int) -> dict[str, list[str] | None]:
    """Flag -> its value on this machine (None: drop the flag)."""
    model = str(work / "qwen3-4b")
    return {
        "--actor-num-nodes": ["1"],
        "--actor-num-gpus-per-node": ["1"],
        "--tensor-model-parallel-size": ["1"],
        "--rollout-num-gpus-per-engine": ["1"],
        "--hf-checkpoint": [model],
        "--ref-load": [model],  # the recipe's torch_dist reference is the same initial weights
        # a 4B checkpoint with its Adam state is ~56 GB and the device's disk is 64 GB: no saving
        "--load": None,
        "--save": None,
        "--save-interval": None,
        "--prompt-data": [str(work / "math.jsonl")],
        "--eval-prompt-data": ["aime", str(work / "aime.jsonl")],
        "--num-rollout": [str(steps)],
        "--rollout-max-response-len": [str(response_len)],
        # the recipe evaluates before training with 16,384-token answers: a random model never stops,
        # so that alone is 480 x 16k tokens (measured: 5 device minutes and not done)
        "--eval-max-response-len": [str(response_len)],
        "--skip-eval-before-train": [],
        # vLLM 0.26 as shipped to the device has no flashinfer, and its compile / CUDA-graph path has
        # not run there yet: eager, as every earlier device run (the fast path is its own measurement)
        "--vllm-enforce-eager": [],
        "--metrics-jsonl": [str(out / "recipe.jsonl")],
        "--save-debug-rollout-data": [str(work / "rollout_{rollout_id}.pkl")],
    }


def rewrite(
    argv: list[str], changes: dict[str, list[str] | None], known_flags: set[str]
) -> tuple[list[str], list[str]]:
    """``argv`` with each changed flag's values replaced (added when absent); what changed, as lines."""
    out, notes, i, seen = [], [], 0, set()
    while i < len(argv):
        token = argv[i]
        j = i + 1
        while j < len(argv) and not (argv[j].startswith("--") and argv[j][2:3].isalpha()):
            j += 1
        if token in changes:
            seen.add(token)
            new = changes[token]
            if new is not None:
                out += [token, *new]
            shown = "(dropped)" if new is None else (" ".join(new) or "(switch)")
            notes.append(f"{token} {' '.join(argv[i + 1 : j]) or '(switch)'} -> {shown}")
        else:
            out += argv[i:j]
        i = j
    for token, new in changes.items():
        if token not in seen and new is not None and (token in known_flags or token.startswith("--vllm-")):
            out += [token, *new]
            notes.append(f"{token} (absent) -> {' '.join(new) or '(switch)'}")
    return out, notes


def prepare(work: Path, input_key: str, label_key: str) -> dict:
    """The Qwen3-4B-shaped checkpoint (random bf16 weights, built on the GPU) and the data sets."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from vime.rollout.synthetic import arithmetic_rows
    from vime.utils.tiny_model import build_tokenizer

    work.mkdir(parents=True, exist_ok=True)
    report: dict = {}
    dest = work / "qwen3-4b"
    if not (dest / "config.json").exists():
        started = time.perf_counter()
        tok = build_tokenizer(work / "tokenizer")
        config = {k: v for k, v in QWEN3_4B.items() if k != "model_type"}
        config.update(
            bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id
        )
        torch.manual_seed(0)
        with torch.device("cuda"):
            model = Qwen3ForCausalLM(Qwen3Config(**config, dtype="bfloat16")).to(torch.bfloat16)
        report["parameters"] = sum(p.numel() for p in model.parameters())
        model.save_pretrained(str(dest), safe_serialization=True)
        tok.save_pretrained(str(dest))
        del model
        torch.cuda.empty_cache()
        report["build_s"] = time.perf_counter() - started
    for name, n, seed in (("math.jsonl", 4096, 0), ("aime.jsonl", 30, 1)):
        rows = arithmetic_rows(n, seed=seed, max_operand=50, operators="+-")
        lines = [json.dumps({input_key: r["input"], label_key: r["label"]}) for r in rows]
        (work / name).write_text("\n".join(lines) + "\n")
    return report


def _flag(argv: list[str], name: str, default: str) -> str:
    return argv[argv.index(name) + 1] if name in argv else default


def summarize(records: list[dict], work: Path, params: int) -> dict:
    from vime.rollout.debug_data import load_rollout_data

    steps = []
    for record in records:
        step = record.get("step")
        row = {
            k: v
            for k, v in record.items()
            if k.startswith(("time/", "weight_sync/", "train/ppo_kl", "train/train_rollout"))
        }
        row["step"] = step
        try:
            data = load_rollout_data(str(work / "rollout_{rollout_id}.pkl"), step)
            row["tokens"] = sum(len(t) for t in data["tokens"])
            row["response_tokens"] = sum(data["response_lengths"])
        except (FileNotFoundError, ValueError, KeyError):
            row["tokens"] = None
        if row["tokens"] and record.get("time/train"):
            row["train_mfu"] = 6 * params * row["tokens"] / record["time/train"] / H200_BF16_PEAK
        steps.append(row)
    later = [r for r in steps if r["step"] not in (None, 0)]
    keys = ("time/step", "time/rollout", "time/train", "time/update_weights", "time/sleep_wake",
            "time/offload_train", "tokens", "train_mfu")  # fmt: skip
    median = {
        k: statistics.median(r[k] for r in later if r.get(k) is not None)
        for k in keys
        if any(r.get(k) is not None for r in later)
    }
    return {"steps": steps, "median_steps_1_on": median}


def run(
    argv_file: Path,
    out: Path,
    work: Path,
    steps: int,
    response_len: int,
    timeout: int,
    phase: str = "all",
) -> dict:
    from bench_moe_gpu import GpuMemorySampler

    from vime.utils.arguments import build_parser

    recipe = json.loads(argv_file.read_text())
    known = {o for a in build_parser(engine_layer=False)._actions for o in a.option_strings}
    argv, notes = rewrite(recipe["argv"], machine_bound(work, out, steps, response_len), known)
    result: dict = {"launch": recipe.get("launch"), "machine_bound_changes": notes}
    result["prepare"] = prepare(
        work, _flag(argv, "--input-key", "input"), _flag(argv, "--label-key", "label")
    )
    if phase == "prepare":
        return result
    command = [sys.executable, str(ROOT / recipe.get("entry", "train.py")), *argv]
    (out / "recipe_argv.txt").write_text(" ".join(command) + "\n")
    print("\n".join(["machine-bound changes:", *notes]), flush=True)
    started = time.perf_counter()
    with GpuMemorySampler() as memory, open(out / "recipe.log", "w") as log:
        try:
            done = subprocess.run(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=timeout)
            result["rc"] = done.returncode
        except subprocess.TimeoutExpired:
            result["rc"] = "timeout"
    result |= {"wall_s": time.perf_counter() - started, "peak_gpu_mib": memory.peak_mib}
    metrics = out / "recipe.jsonl"
    records = [json.loads(line) for line in metrics.read_text().splitlines()] if metrics.exists() else []
    params = result["prepare"].get("parameters") or sum_params(work / "qwen3-4b")
    result["parameters"] = params
    result |= summarize(records, work, params)
    return result


def sum_params(model_dir: Path) -> int:
    """Parameters of the checkpoint's model, counted on the meta device (tied embeddings once: with
    the input lookup free and the output projection a real matmul, that is the matmul count)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(str(model_dir)))
    return sum(p.numel() for p in model.parameters())


def save_argv(verdicts: Path, launch: str, dest: Path) -> None:
    """Pick one launch's captured argument vector out of bench_slime_scripts.py's JSON."""
    rows = json.loads(verdicts.read_text())
    rows = rows["launches"] if isinstance(rows, dict) else rows
    row = next(r for r in rows if launch in (r.get("script") or r.get("launch") or ""))
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(
        json.dumps({"launch": launch, "entry": row.get("entry", "train.py"), "argv": row["argv"]}, indent=1)
    )
    print(f"{launch}: {len(row['argv'])} arguments -> {dest}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--from-verdicts", type=Path)
    parser.add_argument("--launch", default="scripts/run-qwen3-4B.sh")
    parser.add_argument("--save-argv", type=Path)
    parser.add_argument("--argv", type=Path)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/recipe-out")))
    parser.add_argument("--work", type=Path, default=Path("/tmp/recipe"))
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--response-len", type=int, default=512)
    parser.add_argument("--timeout", type=int, default=520)
    parser.add_argument(
        "--phase", choices=["prepare", "all"], default="all", help="prepare: checkpoint and data only"
    )
    opts = parser.parse_args()
    if opts.from_verdicts:
        save_argv(opts.from_verdicts, opts.launch, opts.save_argv)
        return
    opts.out.mkdir(parents=True, exist_ok=True)
    result = run(opts.argv, opts.out, opts.work, opts.steps, opts.response_len, opts.timeout, opts.phase)
    (opts.out / "recipe.json").write_text(json.dumps(result, indent=1, default=str))
    print(json.dumps({k: v for k, v in result.items() if k != "steps"}, indent=1, default=str))
    for row in result.get("steps", []):
        print({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()})


if __name__ == "__main__":
    main()
