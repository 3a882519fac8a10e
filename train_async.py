"""Asynchronous RL training: generation of step N+1 runs while step N trains.

The engines keep generating with the weights they have; the trainer pushes new weights every
``--update-weights-interval`` steps, after the generation in flight has finished (a rollout
never mixes two weight versions). Samples of step N+1 are therefore up to one update behind
the policy that trains on them (``rollout/weight_version_lag`` in the metrics); the PPO ratio
and ``--use-tis`` account for that. Needs the engines on their own GPUs (or the CPU), or sharing
the trainer's with both resident (``--colocate --no-offload-train --no-offload-rollout``).

``--fully-async`` runs :func:`vime.ray.fully_async_loop.train_fully_async` instead: generation never
stops, the trainer takes batches as they finish within ``--max-policy-version-lag`` and pushes
weights into the running engines (docs/async.md).
"""

from __future__ import annotations

import ray
from rich.progress import Progress

from vime.ray.fully_async_loop import train_fully_async
from vime.ray.training_run import (
    StepTimer,
    run_main,
    save_debug_rollout,
    training_session,
)


def train_async(args) -> list[dict]:
    if args.colocate and (args.offload_train or args.offload_rollout):
        raise SystemExit(
            "error: train_async.py overlaps generation and training: drop --colocate (or keep both "
            "resident: --no-offload-train --no-offload-rollout) or use train.py"
        )
    if args.debug_rollout_only or args.load_debug_rollout_data:
        raise SystemExit("error: the --debug-* modes have nothing to overlap: use train.py")
    if args.fully_async:
        return train_fully_async(args)
    with training_session(args) as run:
        run.first_weight_sync()
        before = run.startup_metrics() | run.evaluate_before_training()  # into the first step's record
        in_flight = run.generate_async(run.start_rollout_id)
        with Progress(transient=True) as progress:
            task = progress.add_task(
                "training (async)", total=run.schedule.num_rollout, completed=run.start_rollout_id
            )
            for rollout_id in range(run.start_rollout_id, run.schedule.num_rollout):
                timer = StepTimer()
                with timer.phase("step"):
                    with timer.phase("rollout_wait"):
                        data = ray.get(in_flight)
                    in_flight = None
                    record = data.summary | run.rollout_metrics(rollout_id)
                    if rollout_id + 1 < run.schedule.num_rollout:
                        in_flight = run.generate_async(rollout_id + 1)  # overlaps the training below
                    save_debug_rollout(args, rollout_id, data)
                    with timer.phase("train"):
                        record |= {f"train/{k}": v for k, v in run.train(rollout_id, data).items()}
                    if run.schedule.should_save(rollout_id):
                        with timer.phase("save"):
                            run.save(rollout_id)
                    if (rollout_id + 1) % args.update_weights_interval == 0:
                        with timer.phase("update_weights"):
                            # the manager finishes the generation in flight before it reloads weights
                            run.update_weights()
                    if run.schedule.should_eval(rollout_id):
                        with timer.phase("eval"):
                            record |= run.evaluate(rollout_id)
                run.metrics.log(rollout_id, before | record | timer.as_metrics())
                before = {}
                progress.advance(task)
        if in_flight is not None:
            ray.get(in_flight)
    return run.metrics.records


def main(argv: list[str] | None = None) -> None:
    run_main(train_async, argv)


if __name__ == "__main__":
    main()
