"""A weight push beside the next train step: it overlaps the passes that read the weights, and the
first change of the weights waits for it (vime/ray/push_beside_training.py)."""

from __future__ import annotations

import threading
import time

import pytest

from vime.ray.push_beside_training import PushBesideTraining

PUSH_S = 0.3


class Backend:
    """A train() of a forward (reads the weights) and an optimizer step (changes them), in order."""

    def __init__(self, guards: bool) -> None:
        self.guards = guards
        self.wait = None
        self.events: list[str] = []

    def guard_weight_changes(self, wait) -> bool:
        if self.guards:
            self.wait = wait
        return self.guards

    def train(self, push_done: threading.Event) -> None:
        self.events.append("forward, push done" if push_done.is_set() else "forward, push running")
        if self.wait is not None:
            self.wait()
        self.events.append("step, push done" if push_done.is_set() else "step, push running")


def _push(done: threading.Event, fail: bool = False):
    def push() -> dict[str, float]:
        time.sleep(PUSH_S)
        if fail:
            raise ConnectionError("engine went away")
        done.set()
        return {"weight_sync/send_s": PUSH_S}

    return push


def test_a_guarded_backend_trains_beside_the_push_and_steps_after_it():
    backend, beside, done = Backend(guards=True), PushBesideTraining(), threading.Event()
    assert beside.start(backend, "3", _push(done))
    beside.before_train(backend)
    backend.train(done)
    figures = beside.after_train()
    assert backend.events == ["forward, push running", "step, push done"]
    assert figures["weight_sync/send_s"] == PUSH_S
    assert figures["weight_sync/beside_training"] == 1.0
    assert figures["weight_sync/push_s"] >= PUSH_S
    assert beside.after_train() == {}  # handed over once


def test_a_backend_without_a_guard_pushes_before_it_trains():
    backend, beside, done = Backend(guards=False), PushBesideTraining(), threading.Event()
    assert not beside.start(backend, "3", _push(done))  # nothing started
    assert beside.pending is None and not done.is_set()


def test_a_push_pending_when_the_backend_stops_guarding_is_settled_before_train():
    backend, beside, done = Backend(guards=True), PushBesideTraining(), threading.Event()
    assert beside.start(backend, "3", _push(done))
    backend.guards, backend.wait = False, None
    beside.before_train(backend)
    backend.train(done)
    assert backend.events == ["forward, push done", "step, push done"]


def test_a_failed_push_raises_at_the_weight_change_with_its_version():
    backend, beside, done = Backend(guards=True), PushBesideTraining(), threading.Event()
    beside.start(backend, "7", _push(done, fail=True))
    with pytest.raises(RuntimeError, match="version 7.*engine went away"):
        backend.train(done)
    assert beside.pending is None  # settled: the next call does not wait on it again


def test_a_second_push_waits_for_the_first():
    backend, beside = Backend(guards=True), PushBesideTraining()
    first, second = threading.Event(), threading.Event()
    beside.start(backend, "1", _push(first))
    beside.start(backend, "2", _push(second))
    assert first.is_set() and not second.is_set()
    beside.settle()
    assert second.is_set()
