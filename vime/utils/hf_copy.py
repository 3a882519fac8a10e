"""``--save-hf``: each saved step also as a Hugging Face model directory, written so nothing is lost.

The export goes to a hidden sibling first and is moved into place only when complete, so a crash
never leaves a half-written model under the user's path. A directory already at the path is
replaced only when vime wrote it (it holds ``MARKER``); anything else is left alone and the new
copy goes beside it.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import string
from pathlib import Path

logger = logging.getLogger(__name__)

MARKER = ".vime-hf-export"


def template_error(template: str) -> str | None:
    """Why ``template`` is not a usable ``--save-hf`` path (only ``{rollout_id}`` may be filled), or None."""
    try:
        fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError as exc:
        return f"--save-hf {template}: {exc}; write e.g. {Path(template).parent / 'hf_{rollout_id}'}"
    unknown = sorted(fields - {"rollout_id"})
    if unknown:
        return (
            f"--save-hf {template}: only {{rollout_id}} is filled in, not {{{unknown[0]}}}; "
            f"write e.g. {Path(template).parent / 'hf_{rollout_id}'}"
        )
    return None


def hf_copy_path(template: str, rollout_id: int) -> Path:
    return Path(template.format(rollout_id=rollout_id))


def staging_dir(dest: Path) -> Path:
    """Where the export of ``dest`` is written before it is complete (same filesystem: the move is a rename)."""
    return dest.parent / f".{dest.name}.tmp-{os.getpid()}"


def _move_replacing_ours(staged: Path, target: Path) -> bool:
    """Rename ``staged`` to ``target``, replacing ``target`` only if vime wrote it; False if it is not ours."""
    if target.exists():
        if not (target / MARKER).is_file():
            return False
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        target.rename(old)  # an earlier vime export: a template without {rollout_id}, or a resumed step
        staged.rename(target)
        shutil.rmtree(old, ignore_errors=True)
        return True
    staged.rename(target)
    return True


def publish(staged: Path, dest: Path, rollout_id: int) -> Path:
    """Move a complete export from ``staged`` to ``dest``; returns where it ended up."""
    (staged / MARKER).write_text(json.dumps({"step": rollout_id}) + "\n")
    if _move_replacing_ours(staged, dest):
        return dest
    beside = dest.with_name(f"{dest.name}.vime-step{rollout_id}")
    final = beside if _move_replacing_ours(staged, beside) else staged
    logger.warning(
        "--save-hf: %s exists and vime did not write it, so it is left as it is; step %d's model is at %s",
        dest,
        rollout_id,
        final,
    )
    return final
