"""slime's fully-async rollout: generation of the next step's groups goes on while this one trains.

``--rollout-function-path vime.rollout.fully_async_rollout.generate_rollout_fully_async`` (slime's
``slime.rollout.fully_async_rollout``, translated). One background thread per process runs an
event loop that keeps up to ``vllm_server_concurrency`` x engines groups in flight, taking prompts
from the data source one group at a time and running vime's ``generate_and_rm_group`` on each (so
``--custom-generate-function-path`` and ``--custom-rm-path`` apply). A rollout call takes the first
``rollout_batch_size`` finished groups (in prompt order); the rest stay queued for the next call. A
group with an ABORTED sample (a weight update paused the engines) goes back to the data source, not
to training. The worker stops taking prompts while a full pool of finished groups waits.
Evaluation is refused, as in slime: pass ``--eval-function-path`` for it.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import queue
import threading
from typing import Any

from vime.rollout.generate_and_rm import generate_and_rm_group
from vime.rollout.generate_state import GenerateState
from vime.rollout.rollout_config import RolloutConfig
from vime.utils.http_utils import run
from vime.utils.types import RolloutFnTrainOutput, Sample

__all__ = ["AsyncRolloutWorker", "generate_rollout_fully_async"]

logger = logging.getLogger(__name__)
POLL_S = 0.2


class AsyncRolloutWorker:
    """A background event loop that keeps a pool of groups generating across rollout calls."""

    def __init__(self, args: Any, data_source: Any, concurrency: int) -> None:
        self.args = args
        self.data_source = data_source
        self.concurrency = max(1, concurrency)
        # unbounded: the done callback runs on the loop and must never block it; the loop stops
        # taking prompts instead while a full pool of finished groups waits
        self.finished: queue.Queue[list[Sample]] = queue.Queue()
        self.running = True
        self.thread = threading.Thread(
            target=lambda: asyncio.run(self._loop()), name="fully-async-rollout", daemon=True
        )

    def start(self) -> AsyncRolloutWorker:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.running = False
        if self.thread.is_alive():
            self.thread.join(timeout=10)

    def take(self, limit: int) -> list[list[Sample]]:
        """Up to ``limit`` finished groups; the rest stay queued."""
        taken = []
        while len(taken) < limit:
            try:
                taken.append(self.finished.get_nowait())
            except queue.Empty:
                break
        return taken

    async def _loop(self) -> None:
        in_flight: set[asyncio.Task] = set()
        params = GenerateState(self.args).sampling_params
        while self.running:
            in_flight = {task for task in in_flight if not task.done()}
            while len(in_flight) < self.concurrency and self.finished.qsize() < self.concurrency:
                groups = self.data_source.get_samples(1)
                if not groups:
                    break
                for group in groups:
                    task = asyncio.create_task(generate_and_rm_group(self.args, group, dict(params)))
                    task.add_done_callback(self._on_done)
                    in_flight.add(task)
            await asyncio.sleep(POLL_S)
        if in_flight:
            await asyncio.wait(in_flight, timeout=30)

    def _on_done(self, task: asyncio.Task) -> None:
        if task.cancelled():
            return
        if task.exception() is not None:
            logger.warning("fully-async rollout: a group failed: %r", task.exception())
            return
        group = task.result()
        if any(sample.status == Sample.Status.ABORTED for sample in group):
            self.data_source.add_samples([group])  # back to the source: regenerated with new weights
            return
        self.finished.put(group)


_worker: AsyncRolloutWorker | None = None
_lock = threading.Lock()


def _worker_for(args: Any, data_source: Any) -> AsyncRolloutWorker:
    global _worker
    with _lock:
        if _worker is None or not _worker.thread.is_alive():
            slots = RolloutConfig.from_args(args).request_slots
            _worker = AsyncRolloutWorker(args, data_source, slots).start()
        return _worker


@atexit.register
def _stop_worker() -> None:
    global _worker
    with _lock:
        if _worker is not None:
            _worker.stop()
            _worker = None


async def _collect(args: Any, data_source: Any) -> list[list[Sample]]:
    worker = _worker_for(args, data_source)
    groups: list[list[Sample]] = []
    while len(groups) < args.rollout_batch_size:
        taken = worker.take(args.rollout_batch_size - len(groups))
        groups += taken
        if not taken:
            if not worker.thread.is_alive():
                raise RuntimeError("the fully-async rollout worker stopped; see the log above")
            await asyncio.sleep(0.05)
    return sorted(groups, key=lambda group: min((s.index for s in group if s.index is not None), default=0))


def generate_rollout_fully_async(
    args: Any, rollout_id: int, data_source: Any, evaluation: bool = False
) -> RolloutFnTrainOutput:
    """The rollout function: ``rollout_batch_size`` finished groups, generated in the background."""
    if evaluation:
        raise ValueError(
            "the fully-async rollout does not evaluate; pass --eval-function-path for evaluation"
        )
    return RolloutFnTrainOutput(samples=run(_collect(args, data_source)))
