"""Save and load one step's rollout data (``--save-debug-rollout-data`` / ``--load-debug-rollout-data``).

The path is a template with ``{rollout_id}``, e.g. ``/tmp/rollout_{rollout_id}.pt``. What is saved
is the training-data dict that ``RolloutManager.generate`` returns (plain lists, no engine state),
so a saved run can be replayed into the trainer with no engine running.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

FORMAT_VERSION = 1


def rollout_data_path(template: str, rollout_id: int) -> Path:
    if "{rollout_id}" not in template:
        raise ValueError(
            f"debug rollout data path {template!r} has no '{{rollout_id}}': add it, e.g. /tmp/rollout_{{rollout_id}}.pt"
        )
    return Path(template.format(rollout_id=rollout_id))


def save_rollout_data(template: str, rollout_id: int, data: Any) -> Path:
    """Write ``data`` for ``rollout_id`` (atomically: a crash leaves no half-written file)."""
    path = rollout_data_path(template, rollout_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"format_version": FORMAT_VERSION, "rollout_id": rollout_id, "data": data}
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
    temporary.replace(path)
    return path


def load_rollout_data(template: str, rollout_id: int) -> Any:
    """Read back what ``save_rollout_data`` wrote for ``rollout_id``."""
    path = rollout_data_path(template, rollout_id)
    if not path.is_file():
        raise FileNotFoundError(
            f"no saved rollout data for rollout {rollout_id} at {path}: run with --save-debug-rollout-data first"
        )
    payload = pickle.loads(path.read_bytes())
    if payload.get("format_version") != FORMAT_VERSION or payload.get("rollout_id") != rollout_id:
        raise ValueError(f"{path} is not vime rollout data for rollout {rollout_id}")
    return payload["data"]
