"""The fully-async producer and take (vime.rollout.async_rollout) with a stand-in engine.

The generate hook ``tests.async_hooks.fake_engine_generate`` answers at once with tokens tagged by
the version the test sets, so the admission, the lag of what is taken, a stale group's regeneration
and the stop are checked without vLLM (the real engine: test_async_inflight_update.py,
test_fully_async_e2e.py).
"""

from __future__ import annotations

import threading
import time

import pytest

from tests import async_hooks
from vime.rollout import async_rollout
from vime.rollout.async_gate import samples_of


@pytest.fixture
def producer(tiny_model_dir, arithmetic_prompts):
    from vime.rollout.data_source import make_data_source
    from vime.utils.arguments import parse_args

    args = parse_args([
        "--preset", "tiny-cpu", "--hf-checkpoint", str(tiny_model_dir),
        "--prompt-data", str(arithmetic_prompts), "--input-key", "input", "--label-key", "label",
        "--rollout-batch-size", "1", "--n-samples-per-prompt", "2",
        "--fully-async", "--max-policy-version-lag", "1",
        "--custom-generate-function-path", "tests.async_hooks.fake_engine_generate",
    ])  # fmt: skip
    async_hooks.FAKE_ENGINE.update(version="1", hold_first=None, calls=0)
    source = make_data_source(args)
    yield args, source
    async_rollout.stop_worker()
    async_hooks.FAKE_ENGINE.update(version="1", hold_first=None, calls=0)


def _push(version: int) -> None:
    """What a weight push does for the producer: the engines tag, the manager notes."""
    async_hooks.FAKE_ENGINE["version"] = str(version)
    async_rollout.note_weight_version(str(version))


def _wait(condition, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_takes_run_one_version_ahead_and_report_lags(producer):
    args, source = producer
    _push(1)
    first = async_rollout.generate_rollout_fully_async(args, 0, source)
    assert len(first.samples) == 1 and len(samples_of(first.samples[0])) == 2
    assert first.metrics["async/lag_0"] == 2 and first.metrics["async/lag_1"] == 0
    assert first.metrics["async/policy_version"] == 1
    worker = async_rollout._worker  # the bound of 1 let it start a second group at version 1
    _wait(lambda: len(worker.gate.ready) == 1)
    _push(2)
    second = async_rollout.generate_rollout_fully_async(args, 1, source)
    assert second.metrics["async/lag_1"] == 2  # generated at version 1, trained at 2
    assert all(s.rollout_log_probs == [-0.1, -0.2, -0.3] for s in samples_of(second.samples[0]))
    assert second.metrics["async/regenerated_groups"] == 0


def test_a_group_finishing_two_versions_late_is_regenerated(producer):
    args, source = producer
    release = threading.Event()
    async_hooks.FAKE_ENGINE["hold_first"] = release
    _push(1)
    async_rollout.generate_rollout_fully_async(args, 0, source)  # the other group of version 1
    _push(2)
    async_rollout.generate_rollout_fully_async(args, 1, source)
    _push(3)
    release.set()  # the held group finishes now, its tokens from version 1: lag 2
    worker = async_rollout._worker
    _wait(lambda: not any(t.admitted_version == 1 for t in worker.gate.in_flight.values()))
    third = async_rollout.generate_rollout_fully_async(args, 2, source)
    assert third.metrics["async/regenerated_groups"] == 1 and third.metrics["async/lag_max"] <= 1
    assert worker.gate.total.regenerated_groups == 1
    # its prompts went back to the data source; what is trained from now on comes from version 3
    fourth = async_rollout.generate_rollout_fully_async(args, 3, source)
    later = [s for g in third.samples + fourth.samples for s in samples_of(g)]
    assert all(s.weight_versions == ["3"] and s.response_length == 3 for s in later)


def test_stop_cancels_a_request_in_flight(producer):
    args, source = producer
    async_hooks.FAKE_ENGINE["hold_first"] = threading.Event()  # never released
    _push(1)
    async_rollout.generate_rollout_fully_async(args, 0, source)
    async_rollout.stop_worker()  # returns although the request it cancels never finishes
    assert async_rollout._worker is None
