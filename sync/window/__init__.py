"""vime-sync window: select an upstream PR window, 3-way merge it into the downstream on a new branch.

Plumbing modules (data in, data out): ``history`` (which commits), ``changes`` (which files),
``translation`` (cached translate), ``textmerge``/``structmerge``/``filemerge``/``plan`` (merges),
``worktree`` (branch + commits), ``run`` (the pipeline), ``perpr`` (one commit per PR).
The public names load lazily so the plumbing modules import without the whole pipeline.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SyncError", "WindowResult", "print_summary", "run_window"]


def __getattr__(name: str) -> Any:
    if name in ("run_window", "WindowResult"):
        from sync.window import run

        return getattr(run, name)
    if name == "print_summary":
        from sync.window.summary_table import print_summary

        return print_summary
    if name == "SyncError":
        from sync.model.errors import SyncError

        return SyncError
    raise AttributeError(name)
