"""The fully asynchronous training loop (``train_async.py --fully-async``; docs/async.md).

The engines generate without pause (:mod:`vime.rollout.async_rollout`); each step the trainer takes
the next ``--rollout-batch-size`` groups that finished within ``--max-policy-version-lag``, trains on
them and pushes its weights into the running engines with vLLM's pause mode ``keep``: requests in
flight are frozen for the reload and then go on with the new weights, their later tokens tagged
with the new version. With ``ipc`` the push runs beside the next step's training (its optimizer
step waits for the push, which reads the weights in place), except before an evaluation and after
the last step. Each step's record has train.py's keys plus ``time/rollout_wait`` (the
trainer waiting for a batch), ``async/trainer_idle_s`` (the same seconds) and the take's
``async/*`` metrics (lag histogram, stale groups regenerated or dropped, engine idle seconds).
"""

from __future__ import annotations

from argparse import Namespace

from rich.progress import Progress

from vime.ray.training_run import StepTimer, save_debug_rollout, training_session

PAUSE_MODE = "keep"  # requests in flight survive a weight push


def train_fully_async(args: Namespace) -> list[dict]:
    """Run the whole schedule; returns the per-step metric records (also in the JSONL file)."""
    with training_session(args) as run:
        run.first_weight_sync()  # the engines serve the trainer's starting weights (version 1) before any request
        before = run.startup_metrics() | run.evaluate_before_training()  # into the first step's record
        with Progress(transient=True) as progress:
            task = progress.add_task(
                "training (fully async)", total=run.schedule.num_rollout, completed=run.start_rollout_id
            )
            for rollout_id in range(run.start_rollout_id, run.schedule.num_rollout):
                timer = StepTimer()
                with timer.phase("step"):
                    with timer.phase("rollout_wait"):
                        data = run.generate(rollout_id)  # the next batch that finished within the bound
                    record = data.summary | run.rollout_metrics(rollout_id)
                    save_debug_rollout(args, rollout_id, data)
                    with timer.phase("train"):
                        trained = run.train(rollout_id, data)
                    # a push that ran beside this step reports with it (weight_sync/*)
                    record |= {
                        k if k.startswith("weight_sync/") else f"train/{k}": v for k, v in trained.items()
                    }
                    if run.schedule.should_save(rollout_id):
                        with timer.phase("save"):
                            run.save(rollout_id)
                    if (rollout_id + 1) % args.update_weights_interval == 0:
                        # beside the next step's training, unless the engines must have these weights
                        # now: an evaluation follows, or no step does
                        beside = rollout_id + 1 < run.schedule.num_rollout and not run.schedule.should_eval(
                            rollout_id
                        )
                        with timer.phase("update_weights"):
                            run.update_weights(pause_mode=PAUSE_MODE, beside_training=beside)
                            record |= getattr(run.actor, "last_sync", None) or {}
                    if run.schedule.should_eval(rollout_id):
                        with timer.phase("eval"):
                            record |= run.evaluate(rollout_id)
                record["async/trainer_idle_s"] = timer.seconds["rollout_wait"]
                run.metrics.log(rollout_id, before | record | timer.as_metrics())
                before = {}
                progress.advance(task)
    return run.metrics.records
