"""Checkpoints of the torch backend, laid out like Megatron's so tools find the newest step.

``<save>/iter_0000007/`` holds ``model/`` (a Hugging Face dir: the engines can serve it),
``optimizer.pt``, ``critic.pt`` and ``train_state.json``; ``<save>/latest_checkpointed_iteration.txt``
names the newest complete step and is written last, atomically, so a crash mid-save leaves
the previous checkpoint in charge. An existing step is moved aside, never deleted.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

LATEST_FILE = "latest_checkpointed_iteration.txt"


def iteration_dir(root: str | Path, rollout_id: int) -> Path:
    return Path(root) / f"iter_{rollout_id:07d}"


def latest_iteration(root: str | Path) -> int | None:
    """The newest complete step under ``root`` (None when there is none)."""
    marker = Path(root) / LATEST_FILE
    if not marker.exists():
        return None
    text = marker.read_text().strip()
    if not text.isdigit():
        raise ValueError(f"{marker} holds {text!r}, not a step number: fix or remove that file")
    step = int(text)
    if not iteration_dir(root, step).is_dir():
        raise ValueError(f"{marker} names step {step} but {iteration_dir(root, step)} is missing")
    return step


def staging_dir(root: str | Path, rollout_id: int) -> Path:
    """A fresh directory to write a step into before :func:`commit` publishes it."""
    staging = Path(root) / f".iter_{rollout_id:07d}.partial"
    if staging.exists():
        shutil.rmtree(staging)  # our own unfinished write from a crashed run, never a published step
    staging.mkdir(parents=True)
    return staging


def commit(root: str | Path, rollout_id: int, staging: Path) -> Path:
    """Publish ``staging`` as step ``rollout_id`` and point the latest marker at it."""
    final = iteration_dir(root, rollout_id)
    if final.exists():
        final.rename(final.with_name(f"{final.name}.replaced-{int(time.time())}"))
    staging.rename(final)
    marker = Path(root) / LATEST_FILE
    tmp = marker.with_suffix(".tmp")
    tmp.write_text(f"{rollout_id}\n")
    os.replace(tmp, marker)
    return final


def prune(root: str | Path, keep: int | None) -> list[Path]:
    """Remove all but the newest ``keep`` published steps (only when asked with --keep-checkpoints)."""
    if not keep:
        return []
    steps = sorted(Path(root).glob("iter_[0-9]*"))
    steps = [p for p in steps if p.name[5:].isdigit()]
    removed = steps[:-keep]
    for path in removed:
        shutil.rmtree(path)
    return removed


def write_train_state(path: Path, state: dict) -> None:
    path.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")


def read_train_state(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}
