"""The fully-async part of the run summary (vime/utils/async_summary.py)."""

import pytest

from vime.utils.async_summary import async_summary, async_summary_lines, engine_paused_s


def _step(**extra) -> dict:
    return {"async/policy_version": 2.0, "time/step": 1.0, "async/engine_idle_s": 0.1,
            "async/trainer_idle_s": 0.2, "async/lag_0": 6, "async/lag_1": 2, **extra}  # fmt: skip


def test_the_engines_pause_is_the_servers_phases_where_reported():
    beside = _step(**{"time/update_weights": 0.001, "weight_sync/server_pause_s": 0.01,
                      "weight_sync/server_rpc_s": 0.02, "weight_sync/server_resume_s": 0.005})  # fmt: skip
    alone = _step(**{"time/update_weights": 0.04})
    assert engine_paused_s(beside) == pytest.approx(0.035)
    assert engine_paused_s(alone) == 0.04
    part = async_summary([beside, alone])["async"]
    assert part["weight_push_s"] == pytest.approx(0.075)
    assert part["lag_histogram"] == {"0": 12, "1": 4}
    assert part["engine_idle_fraction"] == pytest.approx(0.1)
    assert part["trainer_idle_fraction"] == pytest.approx(0.2)
    assert "paused up to 0.1s for weight pushes" in async_summary_lines({"async": part})[1]


def test_other_runs_have_no_async_part():
    assert async_summary([{"time/step": 1.0}]) == {}
    assert async_summary_lines({}) == []
