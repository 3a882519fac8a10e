"""Fully asynchronous generation (``train_async.py --fully-async``): the engines never wait for the trainer.

A producer task on the process's background event loop (:func:`vime.utils.http_utils.background_loop`,
the loop every rollout request of vime runs on) keeps groups generating with vime's
``generate_and_rm_group`` (so ``--custom-generate-function-path`` and ``--custom-rm-path`` apply),
admitting them by the rule of :class:`vime.rollout.async_gate.AsyncGate`. The rollout function
:func:`generate_rollout_fully_async` hands the trainer the next ``--rollout-batch-size`` finished
groups, in the order they finished, as soon as there are that many within the staleness bound.

The trainer pushes weights into the running engines with vLLM's pause mode ``keep``: requests in
flight are frozen for the reload and go on (on servers vime starts, with their KV cache recomputed
by the new weights); the tokens after the switch carry the new version. The RolloutManager tells this module each new
version (:func:`note_weight_version`) and stops the producer before its engines
(:func:`stop_worker`). A group that comes back aborted (an engine restart, the end of the run) goes
back to the data source: as it is with ``--partial-rollout`` (continued later, with new weights),
else as its prompts. Evaluation runs vime's eval rollout beside the producer, on the same loop.

Metrics of each take, under ``async/`` (see docs/async.md): the lag histogram of the trained samples,
stale groups regenerated or dropped, stale tokens masked, groups filtered or aborted, the engines'
idle seconds since the last take, and the queue lengths.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import threading
import time
from argparse import Namespace
from collections.abc import Callable
from typing import Any

from vime.rollout.async_gate import AsyncGate, IdleClock, StalenessRule, Ticket, samples_of
from vime.rollout.eval_rollout import eval_rollout
from vime.rollout.filter_hub.base_types import MetricGatherer, call_dynamic_filter
from vime.rollout.generate_and_rm import generate_and_rm_group
from vime.rollout.rollout_config import RolloutConfig
from vime.rollout.sampling_params import build_sampling_params
from vime.utils.http_utils import background_loop, run
from vime.utils.misc import load_function
from vime.utils.types import RolloutFnEvalOutput, RolloutFnTrainOutput, Sample
from vime.utils.weight_versions import version_number

__all__ = ["AsyncRolloutWorker", "generate_rollout_fully_async", "note_weight_version", "stop_worker"]

logger = logging.getLogger(__name__)
POLL_S = 0.5  # the producer looks again at least this often (data may come back to the source)


def _optional_hook(path: str | None) -> Callable[..., Any] | None:
    return load_function(path) if path else None


class AsyncRolloutWorker:
    """The producer and the take of one process (the RolloutManager's)."""

    def __init__(self, args: Namespace, data_source: Any, version: int) -> None:
        self.args = args
        self.data_source = data_source
        cfg = RolloutConfig.from_args(args)
        n = int(cfg.n_samples_per_prompt)
        self.gate = AsyncGate(
            StalenessRule.from_args(args),
            batch_groups=int(cfg.rollout_batch_size),
            max_in_flight=max(1, cfg.request_slots // n),
            takes_per_version=int(cfg.update_weights_interval),
            version=version,
        )
        self.keep_partial = bool(cfg.partial_rollout)
        self.dynamic_filter = _optional_hook(cfg.dynamic_sampling_filter_path)
        self.filter_drops = MetricGatherer()
        self.clock = IdleClock(time.monotonic())
        self.running = True
        self.error: BaseException | None = None
        self.tasks: set[asyncio.Task] = set()
        self.producer_wake = asyncio.Event()
        self.take_wake = asyncio.Event()
        self.producer = asyncio.run_coroutine_threadsafe(self._produce(), background_loop())

    # ----- producer (on the background loop) -----------------------------------------------------
    def _wake(self) -> None:
        self.producer_wake.set()
        self.take_wake.set()

    async def _produce(self) -> None:
        params = build_sampling_params(self.args)
        try:
            while self.running:
                self.producer_wake.clear()
                while self.running and self.gate.may_admit():
                    groups = self.data_source.get_samples(1)
                    if not groups:
                        break  # nothing to generate until a group comes back to the source
                    for group in groups:
                        ticket = self.gate.admit(group)
                        task = asyncio.create_task(self._generate(ticket, group, dict(params)))
                        self.tasks.add(task)
                        task.add_done_callback(self.tasks.discard)
                    self.clock.note(len(self.gate.in_flight), time.monotonic())
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.producer_wake.wait(), POLL_S)
        except Exception as exc:  # the take reports it
            self.error = exc
            self._wake()
            raise

    async def _generate(self, ticket: Ticket, group: list[Sample], params: dict[str, Any]) -> None:
        try:
            group = await generate_and_rm_group(self.args, group, params)
            if any(s.status == Sample.Status.ABORTED for s in samples_of(group)):
                self.data_source.add_samples([self.gate.aborted(ticket, group, self.keep_partial)])
            else:
                verdict = call_dynamic_filter(self.dynamic_filter, self.args, group)
                if not verdict.keep:
                    self.filter_drops.on_dynamic_filter_drop(verdict.reason)
                self.gate.finish(ticket, group, keep=verdict.keep)
        except asyncio.CancelledError:
            raise
        except (
            Exception
        ) as exc:  # a generate or reward hook failed: the run fails, as the default rollout's does
            self.error = exc
        finally:
            self.clock.note(len(self.gate.in_flight), time.monotonic())
            self._wake()

    # ----- take (on the background loop, called through ``run``) --------------------------------
    async def take_batch(self, rollout_id: int) -> RolloutFnTrainOutput:
        """The next ``--rollout-batch-size`` groups within the bound, in the order they finished."""
        target = int(self.args.rollout_batch_size)
        kept: list[list] = []
        stale: list[list] = []
        lags: list[int] = []
        multi_version = untagged = 0
        while True:
            self.take_wake.clear()
            if self.error is not None:
                raise RuntimeError(f"fully-async generation failed: {self.error!r}") from self.error
            result = self.gate.take(target - len(kept))
            kept += result.groups
            stale += result.stale
            lags += result.lags
            multi_version += result.multi_version_samples
            untagged += result.untagged_samples
            for group in result.regenerate:
                self.data_source.add_samples([group])
            if result.regenerate:
                self.producer_wake.set()
            if len(kept) >= target:
                break
            self.producer_wake.set()  # taking frees room for admission
            await self.take_wake.wait()
        kept.sort(
            key=lambda group: min((s.index for s in samples_of(group) if s.index is not None), default=0)
        )
        cfg = RolloutConfig.from_args(self.args)
        sample_filter = _optional_hook(cfg.rollout_sample_filter_path)
        if sample_filter is not None:
            sample_filter(self.args, kept)
        process_all = _optional_hook(cfg.rollout_all_samples_process_path)
        if process_all is not None:
            process_all(self.args, kept + stale, self.data_source)
        return RolloutFnTrainOutput(samples=kept, metrics=self._metrics(lags, multi_version, untagged))

    def _metrics(self, lags: list[int], multi_version: int, untagged: int) -> dict[str, float]:
        bound = self.gate.rule.max_lag
        top = max([*lags, bound if bound is not None else 0])
        metrics = {f"async/lag_{k}": float(sum(1 for lag in lags if lag == k)) for k in range(top + 1)}
        if lags:
            metrics["async/lag_mean"] = sum(lags) / len(lags)
            metrics["async/lag_max"] = float(max(lags))
        metrics |= self.gate.pop_counts().as_metrics("async/")
        metrics |= {
            "async/multi_version_samples": float(multi_version),
            "async/untagged_samples": float(untagged),
            "async/engine_idle_s": self.clock.pop(time.monotonic()),
            "async/in_flight_groups": float(len(self.gate.in_flight)),
            "async/ready_groups": float(len(self.gate.ready)),
            "async/policy_version": float(self.gate.version),
        }
        return metrics | {k: float(v) for k, v in self.filter_drops.collect().items()}

    async def _note_version(self, version: int) -> None:
        self.gate.note_version(version)
        self._wake()

    async def _stop(self) -> None:
        self.running = False
        self._wake()
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()  # the request's connection closes: vLLM aborts it
        await asyncio.gather(*tasks, return_exceptions=True)

    def stop(self) -> None:
        try:
            run(self._stop(), timeout=30)
        except Exception as exc:  # stopping anyway
            logger.warning("stopping the fully-async producer: %r", exc)


_worker: AsyncRolloutWorker | None = None
_version = 0  # the newest version pushed, noted before the worker exists too
_lock = threading.Lock()


def _worker_for(args: Namespace, data_source: Any) -> AsyncRolloutWorker:
    global _worker
    with _lock:
        if _worker is None or _worker.args is not args:
            if _worker is not None:
                _worker.stop()
            _worker = AsyncRolloutWorker(args, data_source, _version)
        return _worker


def note_weight_version(version: str | int | None) -> None:
    """The engines serve ``version`` from now on (the RolloutManager calls this after every push)."""
    global _version
    number = version_number(version) if version is not None else None
    if number is None:
        logger.warning(
            "fully-async: weight version %r is not vime's counter; staleness keeps %d", version, _version
        )
        return
    with _lock:
        _version = number
        worker = _worker
    if worker is not None:
        run(worker._note_version(number))


@atexit.register
def stop_worker() -> None:
    """Stop the producer and cancel what it has in flight (before the engines stop)."""
    global _worker
    with _lock:
        worker, _worker = _worker, None
    if worker is not None:
        worker.stop()


def generate_rollout_fully_async(
    args: Namespace, rollout_id: int, data_source: Any, evaluation: bool = False
) -> RolloutFnTrainOutput | RolloutFnEvalOutput:
    """The rollout function of ``--fully-async``: the next batch of groups generated in the background
    (``evaluation``: vime's eval rollout, on the current weights, beside the producer)."""
    if evaluation:
        return run(eval_rollout(args, rollout_id))
    return run(_worker_for(args, data_source).take_batch(rollout_id))
