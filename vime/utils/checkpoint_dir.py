"""Which checkpoints a run may read, write and delete: the rules both training backends share.

A ``--save`` directory belongs to one line of runs. A fresh run refuses a directory that already
holds published steps (it would overwrite the latest marker, the data-source state and prune
the other run's steps); continuing that run is an explicit choice (``--load DIR`` or
``--resume``). Pruning removes only steps this process wrote, and never the step the latest
marker names. ``--load`` takes the directory (its latest step) or one step directory
(``iter_0000009``): that step is loaded, or the run is refused; never a silent fresh start.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

LATEST_FILE = "latest_checkpointed_iteration.txt"
_STEP_DIR = re.compile(r"iter_(\d{7})")


class CheckpointDirError(ValueError):
    """A --save / --load directory that this run must not use; the message is one line."""


def iteration_dir(root: str | Path, step: int) -> Path:
    return Path(root) / f"iter_{step:07d}"


def step_of(path: str | Path) -> int | None:
    """The step a directory named ``iter_NNNNNNN`` holds, else None."""
    match = _STEP_DIR.fullmatch(Path(path).name)
    return int(match.group(1)) if match else None


def published_steps(root: str | Path) -> list[int]:
    """Complete steps under ``root`` (staging names such as ``.iter_…partial`` or ``iter_….tmp`` excluded)."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(s for p in root.iterdir() if p.is_dir() and (s := step_of(p)) is not None)


def read_marker(root: str | Path) -> int | None:
    """The step the latest marker names (None without a marker); a bad marker is refused."""
    marker = Path(root) / LATEST_FILE
    if not marker.exists():
        return None
    text = marker.read_text().strip()
    if not text.isdigit():
        raise CheckpointDirError(f"{marker} holds {text!r}, not a step number: fix or remove that file")
    return int(text)


def write_marker(root: str | Path, step: int) -> None:
    """Point the latest marker at ``step``: a temporary file, then an atomic rename."""
    marker = Path(root) / LATEST_FILE
    tmp = marker.with_name(f".{LATEST_FILE}.{os.getpid()}.tmp")
    tmp.write_text(f"{step}\n")
    os.replace(tmp, marker)


@dataclass(frozen=True)
class LoadTarget:
    root: Path
    step: int | None  # None: nothing saved yet (a fresh run resuming its own empty --save)


def resolve_load(path: str | Path, save: str | Path | None = None) -> LoadTarget:
    """What ``--load PATH`` loads: one step directory, or the newest step the marker names.

    An empty or missing directory is only accepted when it is also ``--save`` (a run that
    names its own checkpoint dir as ``--load``, as slime's scripts do, starts fresh).
    """
    path = Path(path)
    own_save = save is not None and Path(save).resolve() == path.resolve()
    step = step_of(path)
    if step is not None:
        if not path.is_dir():
            raise CheckpointDirError(f"--load {path} does not exist: give an existing iter_NNNNNNN directory")
        return LoadTarget(path.parent, step)
    if not path.is_dir():
        if own_save:
            return LoadTarget(path, None)
        raise CheckpointDirError(f"--load {path} does not exist: fix the path or drop --load to start fresh")
    latest = read_marker(path)
    steps = published_steps(path)
    if latest is None:
        if steps:
            raise CheckpointDirError(
                f"--load {path} has steps {steps[0]}..{steps[-1]} but no {LATEST_FILE}: "
                f"load one step with --load {iteration_dir(path, steps[-1])}"
            )
        if own_save:
            return LoadTarget(path, None)
        raise CheckpointDirError(
            f"--load {path} holds no checkpoint (no {LATEST_FILE}): fix the path or drop --load"
        )
    if not iteration_dir(path, latest).is_dir():
        raise CheckpointDirError(
            f"{path / LATEST_FILE} names step {latest} but {iteration_dir(path, latest)} is missing: "
            f"load another step with --load {path}/iter_NNNNNNN"
        )
    return LoadTarget(path, latest)


def check_save_dir(save: str | Path, load_root: str | Path | None) -> None:
    """Refuse a ``--save`` that holds another run's checkpoints, unless this run continues from it."""
    save = Path(save)
    steps = published_steps(save)
    marker = (save / LATEST_FILE).exists()
    if not steps and not marker:
        return
    if load_root is not None and Path(load_root).resolve() == save.resolve():
        return
    held = f"steps {steps[0]}..{steps[-1]}" if steps else "a latest-step marker"
    raise CheckpointDirError(
        f"--save {save} already holds another run's checkpoints ({held}): continue that run with "
        f"--resume (or --load {save}), or give an empty --save directory"
    )


def prune(root: str | Path, keep: int | None, written_by_this_run: list[int]) -> list[Path]:
    """Remove this run's oldest steps beyond the newest ``keep``; never another run's, never the marker's."""
    if not keep:
        return []
    protected = read_marker(root)
    mine = sorted(s for s in set(written_by_this_run) if iteration_dir(root, s).is_dir())
    removed = []
    for step in mine[:-keep]:
        if step == protected:
            continue
        path = iteration_dir(root, step)
        shutil.rmtree(path)
        removed.append(path)
    return removed
