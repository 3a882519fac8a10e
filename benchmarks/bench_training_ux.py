"""How fast a bad run is refused, and how fast Ctrl-C ends a good one.

    .venv/bin/python benchmarks/bench_training_ux.py [--repeats 3] [--ctrl-c]

Time to the error: ``train.py`` from a cold process with one bad input each (a missing prompt
file, an unimportable hook, a reward returning NaN, a typo'd flag, ``--vllm-uds``), median of
``--repeats``, beside the reference measured in the same run: a cold process that only builds
the full parser (the floor any refusal pays). ``--ctrl-c`` also runs the tiny model's training
(real Ray, engine, router), sends SIGINT to its process group after two steps, and times the
exit. Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    last = (done.stderr.strip().splitlines() or [""])[-1]
    return time.monotonic() - started, last


def refusals(model: Path, root: Path, repeats: int) -> None:
    (root / "hooks").mkdir(exist_ok=True)
    (root / "hooks" / "bench_rewards.py").write_text(
        "def nan(args, sample, **kw):\n    return float('nan')\n"
    )
    prompts = root / "p.jsonl"
    prompts.write_text(
        "".join(json.dumps({"input": f"What is {i}+1?", "label": str(i + 1)}) + "\n" for i in range(8))
    )
    base = [sys.executable, "train.py", "--hf-checkpoint", str(model), "--prompt-data", str(prompts),
            "--label-key", "label", "--rollout-batch-size", "2", "--n-samples-per-prompt", "2",
            "--num-rollout", "2", "--rm-type", "math"]  # fmt: skip
    cases = {
        "missing prompt file": ["--prompt-data", "/nonexistent.jsonl"],
        "unimportable hook": ["--custom-rm-path", "no_such_pkg.fn"],
        "reward returns NaN": ["--custom-rm-path", "bench_rewards.nan"],
        "typo'd flag": ["--rollout-batchsize", "2"],
        "--vllm-uds": ["--vllm-uds", "/tmp/x.sock"],
    }
    env = dict(os.environ, PYTHONPATH=str(root / "hooks"))
    reference = [sys.executable, "-c", "from vime.utils.arguments import build_parser; build_parser()"]
    ref = statistics.median(_timed(reference, env)[0] for _ in range(repeats))
    print(f"reference (cold process, build the full parser): {ref:.2f}s")
    for name, flags in cases.items():
        runs = [_timed(base + flags, env) for _ in range(repeats)]
        seconds = statistics.median(s for s, _ in runs)
        print(
            f"{name}: {seconds:.2f}s to the error ({seconds / ref:.2f}x the reference): {runs[-1][1][:150]}"
        )


def ctrl_c(model: Path, repeats: int) -> None:
    exits = []
    for _ in range(repeats):
        root = Path(tempfile.mkdtemp(prefix="bux-", dir="/tmp"))
        cmd = [sys.executable, str(ROOT / "train.py"), "--preset", "tiny-cpu", "--hf-checkpoint", str(model),
               "--rollout-batch-size", "4", "--n-samples-per-prompt", "2", "--num-rollout", "200",
               "--run-dir", str(root / "run"), "--save", str(root / "ckpt"), "--vllm-kv-cache-memory-bytes", "256M"]  # fmt: skip
        proc = subprocess.Popen(cmd, cwd=root, stderr=subprocess.DEVNULL, start_new_session=True)
        metrics = root / "run" / "metrics.jsonl"
        while not metrics.exists() or len(metrics.read_text().splitlines()) < 2:
            if proc.poll() is not None:
                raise SystemExit(f"training exited early ({proc.returncode})")
            time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)
        sent = time.monotonic()
        proc.wait(timeout=120)
        exits.append(time.monotonic() - sent)
        print(f"Ctrl-C to exit: {exits[-1]:.1f}s (status {proc.returncode})")
    print(f"Ctrl-C to exit, median of {repeats}: {statistics.median(exits):.1f}s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ctrl-c", action="store_true", help="Also time Ctrl-C of a real training run.")
    args = parser.parse_args()
    from vime.utils.tiny_model import build_tiny_model

    root = Path(tempfile.mkdtemp(prefix="bench-ux-"))
    model = root / "model"
    build_tiny_model(model, seed=0)
    refusals(model, root, args.repeats)
    if args.ctrl_c:
        ctrl_c(model, args.repeats)


if __name__ == "__main__":
    main()
