"""A rank's weight push running beside its next train() (``--fully-async`` with ``ipc``).

The engines copy the trainer's weights in place (CUDA IPC views), so a push may overlap the next
step's forward and backward passes, which only read the weights; the first change of the weights
(the optimizer step) waits for the push. Every other call of the rank settles the push first.
This hides the push's seconds (pause, copy, resume and their round trips) behind training.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol


class GuardedBackend(Protocol):
    def guard_weight_changes(self, wait: Callable[[], None]) -> bool: ...


class PendingPush:
    """A push in its thread; :meth:`wait` joins it and gives its figures or raises its error."""

    def __init__(self, version: str, push: Callable[[], dict[str, float]]) -> None:
        self.version = version
        self.figures: dict[str, float] = {}
        self.error: BaseException | None = None
        self.started = time.perf_counter()
        self.thread = threading.Thread(
            target=self._run, args=(push,), name=f"weight-push-{version}", daemon=True
        )
        self.thread.start()

    def _run(self, push: Callable[[], dict[str, float]]) -> None:
        try:
            self.figures = dict(push())
        except BaseException as error:  # raised again in the thread that waits
            self.error = error
        self.figures["weight_sync/push_s"] = time.perf_counter() - self.started

    def wait(self) -> dict[str, float]:
        waited = time.perf_counter()
        self.thread.join()
        if self.error is not None:
            raise RuntimeError(
                f"the weight push of version {self.version}, run beside training, failed: {self.error}"
            ) from self.error
        return self.figures | {
            "weight_sync/beside_training": 1.0,
            "weight_sync/wait_s": time.perf_counter() - waited,
        }


class PushBesideTraining:
    """At most one push beside training, and the figures of the last one settled."""

    def __init__(self) -> None:
        self.pending: PendingPush | None = None
        self.figures: dict[str, float] = {}

    def start(self, backend: GuardedBackend, version: str, push: Callable[[], dict[str, float]]) -> bool:
        """Start ``push`` in a thread, guarded by the backend; False (nothing started) where it cannot."""
        self.settle()
        if not backend.guard_weight_changes(self.settle):
            return False
        self.pending = PendingPush(version, push)
        return True

    def settle(self) -> None:
        """Wait for the push, if one runs (the backend's guard and every call that touches weights)."""
        if self.pending is not None:
            pending, self.pending = self.pending, None
            self.figures = pending.wait()

    def before_train(self, backend: GuardedBackend) -> None:
        if self.pending is not None and not backend.guard_weight_changes(self.settle):
            self.settle()  # this backend cannot train beside a push

    def after_train(self) -> dict[str, float]:
        """Settle (a step without an optimizer step did not) and hand over the push's figures."""
        self.settle()
        figures, self.figures = self.figures, {}
        return figures
