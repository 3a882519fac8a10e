"""The run summary's part for ``--fully-async`` runs: the ``async/*`` step metrics added up.

Per step, the fully-async loop logs the lag histogram of the samples it trained on
(``async/lag_<k>``), the stale groups regenerated or dropped and stale tokens masked since the
previous step, the seconds the engines had none of vime's requests in flight
(``async/engine_idle_s``) and the seconds the trainer waited for its batch
(``async/trainer_idle_s``). Over the run these become totals and shares of the steps' time.
"""

from __future__ import annotations

from typing import Any

LAG_PREFIX = "async/lag_"
COUNTS = (
    "regenerated_groups",
    "dropped_groups",
    "masked_stale_tokens",
    "filtered_groups",
    "aborted_groups",
    "multi_version_samples",
)


def _total(records: list[dict[str, Any]], key: str) -> float:
    return float(sum(r.get(key, 0.0) for r in records if isinstance(r.get(key), int | float)))


SERVER_PHASES = ("weight_sync/server_pause_s", "weight_sync/server_rpc_s", "weight_sync/server_resume_s")


def engine_paused_s(record: dict[str, Any]) -> float:
    """Seconds the engines stood paused for this step's push: the servers' own phases where they
    report them (a push beside training takes no step time of its own), else the push's seconds."""
    phases = [record[k] for k in SERVER_PHASES if isinstance(record.get(k), int | float)]
    return float(sum(phases)) if phases else float(record.get("time/update_weights", 0.0))


def async_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"async": {...}}`` for a fully-async run's records; ``{}`` for any other run."""
    steps = [r for r in records if "async/policy_version" in r]
    if not steps:
        return {}
    lags = sorted(
        int(key[len(LAG_PREFIX) :])
        for key in {k for r in steps for k in r}
        if key.startswith(LAG_PREFIX) and key[len(LAG_PREFIX) :].isdigit()
    )
    wall = _total(steps, "time/step")
    out: dict[str, Any] = {
        "lag_histogram": {str(k): int(_total(steps, f"{LAG_PREFIX}{k}")) for k in lags},
        "lag_max": max((float(r.get("async/lag_max", 0.0)) for r in steps), default=0.0),
        **{name: int(_total(steps, f"async/{name}")) for name in COUNTS},
        "engine_idle_s": _total(steps, "async/engine_idle_s"),
        "weight_push_s": sum(engine_paused_s(r) for r in steps),
        "trainer_idle_s": _total(steps, "async/trainer_idle_s"),
        "step_s": wall,
    }
    if wall > 0:
        out["engine_idle_fraction"] = out["engine_idle_s"] / wall
        out["trainer_idle_fraction"] = out["trainer_idle_s"] / wall
    return {"async": out}


def async_summary_lines(summary: dict[str, Any]) -> list[str]:
    """The console lines of :func:`async_summary`'s part (none for other runs)."""
    part = summary.get("async")
    if not part:
        return []
    histogram = ", ".join(f"{lag}: {count}" for lag, count in part["lag_histogram"].items())
    lines = [
        f"fully async: samples by lag (versions behind the trainer) {{{histogram}}}; stale groups "
        f"regenerated {part['regenerated_groups']}, dropped {part['dropped_groups']}; "
        f"stale tokens masked {part['masked_stale_tokens']}"
    ]
    if "engine_idle_fraction" in part:
        lines.append(
            f"fully async: engines idle {part['engine_idle_s']:.1f}s ({part['engine_idle_fraction']:.0%} of the "
            f"steps' time) and paused up to {part['weight_push_s']:.1f}s for weight pushes; trainer "
            f"waiting for batches {part['trainer_idle_s']:.1f}s ({part['trainer_idle_fraction']:.0%})"
        )
    return lines
