"""Checkpoints of the torch backend, laid out like Megatron's so tools find the newest step.

``<save>/iter_0000007/`` holds ``model/`` (a Hugging Face dir: the engines can serve it),
``optimizer.pt``, ``critic.pt`` and ``train_state.json``; ``<save>/latest_checkpointed_iteration.txt``
names the newest complete step and is written last, atomically, so a crash mid-save leaves
the previous checkpoint in charge. An existing step is moved aside, never deleted. Which
directories a run may use and prune: :mod:`vime.utils.checkpoint_dir`.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from vime.utils.checkpoint_dir import LATEST_FILE, iteration_dir, read_marker, write_marker
from vime.utils.checkpoint_dir import prune as prune_own_steps

__all__ = ["LATEST_FILE", "commit", "iteration_dir", "latest_iteration", "prune", "staging_dir"]


def latest_iteration(root: str | Path) -> int | None:
    """The newest complete step under ``root`` (None when there is none)."""
    step = read_marker(root)
    if step is not None and not iteration_dir(root, step).is_dir():
        raise ValueError(
            f"{Path(root) / LATEST_FILE} names step {step} but {iteration_dir(root, step)} is missing"
        )
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
    write_marker(root, rollout_id)
    return final


def prune(root: str | Path, keep: int | None, written_by_this_run: list[int]) -> list[Path]:
    """Remove this run's steps beyond the newest ``keep`` (only when asked with --keep-checkpoints)."""
    return prune_own_steps(root, keep, written_by_this_run)


def write_train_state(path: Path, state: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def read_train_state(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}
