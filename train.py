"""Synchronous RL training: for each step, generate -> train -> push weights -> eval / save.

python train.py --preset tiny-cpu
python train.py --hf-checkpoint MODEL --prompt-data data.jsonl --rm-type math ...
"""

from __future__ import annotations

from rich.progress import Progress

from vime.ray.training_run import (
    StepTimer,
    run_main,
    save_debug_rollout,
    training_session,
)


def train(args) -> list[dict]:
    """Run the whole schedule; returns the per-step metric records (also in the JSONL file)."""
    if args.fully_async:
        raise SystemExit("error: --fully-async is a mode of train_async.py: run train_async.py --fully-async")
    with training_session(args) as run:
        run.first_weight_sync()  # engines serve the trainer's (possibly resumed) weights from step one
        before = run.startup_metrics() | run.evaluate_before_training()  # into the first step's record
        with Progress(transient=True) as progress:
            task = progress.add_task(
                "training", total=run.schedule.num_rollout, completed=run.start_rollout_id
            )
            for rollout_id in range(run.start_rollout_id, run.schedule.num_rollout):
                timer = StepTimer()
                with timer.phase("step"):
                    with timer.phase("rollout"):
                        data = run.generate(rollout_id)
                    with timer.phase("sleep_wake"):
                        run.offload_rollout()
                    save_debug_rollout(args, rollout_id, data)
                    record = data.summary | run.rollout_metrics(rollout_id)
                    if run.actor is not None:
                        with timer.phase("train"):
                            run.onload_train()
                            record |= {f"train/{k}": v for k, v in run.train(rollout_id, data).items()}
                        if run.schedule.should_save(rollout_id):
                            with timer.phase("save"):
                                run.save(rollout_id)
                        with timer.phase("sleep_wake"):
                            run.onload_rollout(["weights"])
                        with timer.phase("update_weights"):
                            run.update_weights()
                            record |= getattr(run.actor, "last_sync", None) or {}
                        with timer.phase("offload_train"):
                            run.offload_train()
                            record |= run.actor.offload_metrics
                        with timer.phase("sleep_wake"):
                            run.onload_rollout(["kv_cache"])
                    if run.schedule.should_eval(rollout_id):
                        with timer.phase("eval"):
                            record |= run.evaluate(rollout_id)
                run.metrics.log(rollout_id, before | record | timer.as_metrics())
                before = {}
                progress.advance(task)
    return run.metrics.records


def main(argv: list[str] | None = None) -> None:
    run_main(train, argv)


if __name__ == "__main__":
    main()
