"""The rollout data path, before and after the per-rank split: step time and the driver's peak memory.

Before: the rollout manager returned the whole batch to the driver, which sent all of it to every
training rank; each rank converted it and kept its share. After: the manager splits the batch per
data-parallel rank (``LocalRolloutManager.generate_for_training``, the real method) and the driver
hands each rank one object reference. Ray is real (a fresh local cluster per measured path, each in
its own driver process so that one path's freed memory cannot hide the other's peak). Stand-ins:
the manager serves one synthetic batch made once (its generation cost is the same on both paths and
left out), and each rank runs the real train actor's conversion and the real torch backend's share
selection (``TorchTrainBackend._shard``) but no model.

    python benchmarks/bench_rollout_data_path.py                      # 4 ranks x 1024 samples, ~2k tokens
    python benchmarks/bench_rollout_data_path.py --samples-per-rank 256 --steps 2   # a quick look

Prints one row per path: median step seconds (driver asks for the step's data -> every rank done),
the driver's peak RSS above its level before the first step, and the ranks' largest peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from argparse import Namespace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PATHS = ("before", "after")


def _batching_args(total: int, steps_per_rollout: int) -> Namespace:
    """slime's recipe batching: dynamic micro-batches under a token budget, --balance-data."""
    return Namespace(
        global_batch_size=total // steps_per_rollout,
        micro_batch_size=1,
        use_dynamic_batch_size=True,
        max_tokens_per_gpu=9216,
        log_probs_max_tokens_per_gpu=None,
        balance_data=True,
        data_pad_size_multiplier=1,
        tensor_model_parallel_size=None,
    )


def synthetic_rollout(num_samples: int, prompt_len: int, response_len: int, seed: int) -> dict[str, list]:
    """A rollout dict as convert_samples_to_train_data makes it: tokens, masks, rewards, log-probs."""
    import numpy as np

    rng = np.random.default_rng(seed)
    prompts = rng.integers(prompt_len // 2, prompt_len * 3 // 2, num_samples)
    responses = rng.integers(response_len // 2, response_len * 3 // 2, num_samples)
    data: dict[str, list] = {"tokens": [], "response_lengths": [], "loss_masks": [], "rollout_log_probs": []}
    for p, r in zip(prompts.tolist(), responses.tolist(), strict=True):
        data["tokens"].append(rng.integers(0, 151_936, p + r).tolist())
        data["response_lengths"].append(r)
        data["loss_masks"].append([1] * r)
        data["rollout_log_probs"].append((-rng.random(r)).tolist())
    data["rewards"] = rng.random(num_samples).tolist()
    data["raw_reward"] = list(data["rewards"])
    data["sample_indices"] = list(range(num_samples))
    return data


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def child(opts: argparse.Namespace) -> dict:
    """One path, measured in this (fresh) driver process."""
    import logging

    import ray

    from vime.ray.rollout_data import rollout_summary

    ranks, total = opts.ranks, opts.ranks * opts.samples_per_rank
    args = _batching_args(total, opts.optimizer_steps)

    @ray.remote(num_cpus=0)
    class RolloutSource:
        """The manager's data side: ``generate`` returns the step's dict; ``generate_for_training`` is
        the real manager method (split per rank, each share put in the object store)."""

        def __init__(self, args, total, prompt_len, response_len):
            from vime.ray.rollout_manager import LocalRolloutManager

            self.manager_method = LocalRolloutManager.generate_for_training
            self.args = args
            self.data = synthetic_rollout(total, prompt_len, response_len, seed=0)

        def generate(self, rollout_id: int) -> dict[str, list]:
            return self.data

        def generate_for_training(self, rollout_id: int, dp_size: int):
            return self.manager_method(self, rollout_id, dp_size)

        def peak_rss(self) -> int:
            return _peak_rss()

    @ray.remote(num_cpus=0)
    class DataRank:
        """A training rank's data handling: TrainRayActor.train's conversion, the backend's selection."""

        def __init__(self, args, rank: int, ranks: int):
            from vime.backends.micro_batches import BatchingConfig
            from vime.backends.torch_utils.actor import TorchTrainBackend

            self.backend = TorchTrainBackend(args, rank, ranks)
            self.backend.batching = BatchingConfig.from_args(args)
            self.backend._forward_plan = None

        def train(self, rollout_id: int, data) -> dict[str, int]:
            from vime.backends.train_data import TrainBatch

            batch = data if isinstance(data, TrainBatch) else TrainBatch.from_rollout_data(data)
            local, steps = self.backend._shard(batch)
            return {"samples": len(local), "tokens": sum(len(t) for t in local.tokens), "steps": len(steps)}

        def peak_rss(self) -> int:
            return _peak_rss()

    ray.init(
        num_cpus=ranks + 1,
        include_dashboard=False,
        logging_level=logging.WARNING,
        runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},
    )
    try:
        source = RolloutSource.remote(args, total, opts.prompt_len, opts.response_len)
        actors = [DataRank.remote(args, r, ranks) for r in range(ranks)]
        ray.get([source.peak_rss.remote(), *[a.peak_rss.remote() for a in actors]])  # all started
        baseline = _peak_rss()
        seconds, trained = [], []
        for step in range(opts.steps):
            started = time.perf_counter()
            if opts.path == "before":  # the driver fetches the whole dict and sends it to every rank
                data = ray.get(source.generate.remote(step))
                summary = rollout_summary(data)
                results = ray.get([a.train.remote(step, data) for a in actors])
                del data
            else:
                shards = ray.get(source.generate_for_training.remote(step, ranks))
                summary = shards.summary
                results = ray.get([a.train.remote(step, shards.refs[r]) for r, a in enumerate(actors)])
                del shards
            seconds.append(time.perf_counter() - started)
            trained.append(results)
        return {
            "path": opts.path,
            "step_s": seconds,
            "median_step_s": statistics.median(seconds),
            "driver_peak_above_start_mb": (_peak_rss() - baseline) / 2**20,
            "driver_peak_mb": _peak_rss() / 2**20,
            "rank_peak_mb": max(ray.get([a.peak_rss.remote() for a in actors])) / 2**20,
            "manager_peak_mb": ray.get(source.peak_rss.remote()) / 2**20,
            "samples": int(summary["rollout/samples"]),
            "per_rank": [[r["samples"], r["tokens"], r["steps"]] for r in trained[-1]],
        }
    finally:
        ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--samples-per-rank", type=int, default=1024)
    parser.add_argument("--prompt-len", type=int, default=512, help="mean prompt tokens (uniform, +-50%%)")
    parser.add_argument(
        "--response-len", type=int, default=1536, help="mean response tokens (uniform, +-50%%)"
    )
    parser.add_argument("--optimizer-steps", type=int, default=2, help="optimizer steps per rollout")
    parser.add_argument("--steps", type=int, default=3, help="measured rollout steps per path")
    parser.add_argument("--order", default="before,after", help="paths in the order they run")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--path", choices=PATHS, help=argparse.SUPPRESS)  # the child's
    opts = parser.parse_args()
    if opts.path:
        print("RESULT " + json.dumps(child(opts)), flush=True)
        return
    load = os.getloadavg()[0]
    results = []
    for path in opts.order.split(","):
        argv = [sys.executable, __file__, "--path", path] + [
            f"--{k.replace('_', '-')}={v}"
            for k, v in vars(opts).items()
            if k not in ("path", "json", "order") and v is not None
        ]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
        if line is None:
            sys.exit(f"the {path} run failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
        results.append(json.loads(line.removeprefix("RESULT ")))
        r = results[-1]
        print(
            f"{path:7s} median step {r['median_step_s']:.2f} s (steps {', '.join(f'{s:.2f}' for s in r['step_s'])}); "
            f"driver peak +{r['driver_peak_above_start_mb']:.0f} MiB (total {r['driver_peak_mb']:.0f}); "
            f"largest rank peak {r['rank_peak_mb']:.0f} MiB; manager peak {r['manager_peak_mb']:.0f} MiB; "
            f"per rank [samples, tokens, optimizer steps] {r['per_rank']}",
            flush=True,
        )
    by = {r["path"]: r for r in results}
    if {"before", "after"} <= by.keys():
        if by["before"]["per_rank"] != by["after"]["per_rank"]:
            sys.exit(
                "the two paths trained different shares: "
                + json.dumps([by["before"]["per_rank"], by["after"]["per_rank"]])
            )
        ratio = by["before"]["median_step_s"] / by["after"]["median_step_s"]
        print(
            f"step time before/after: {ratio:.2f}x; load average at start {load:.2f}; {os.cpu_count()} cores"
        )
    if opts.json:
        opts.json.write_text(json.dumps({"load": load, "results": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
