"""``--per-pr``: one commit per upstream PR in merge order, so a reviewer can bisect the window.

Step i holds the merge of cutoff..commit_i (the same per-file merge as the whole window, on a
shorter range); the last step equals the whole-window tree. Reports and state come in a final commit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from sync.reports import report_dir_name
from sync.window.changes import changed_files
from sync.window.filemerge import FileOutcome
from sync.window.gitio import commit_date
from sync.window.history import Window
from sync.window.messages import merge_message, outcome_totals, per_pr_message
from sync.window.plan import Downstream, merge_labels, plan_change
from sync.window.progress import stage_progress
from sync.window.translation import Translated, TranslationCache
from sync.window.worktree import commit_paths, create_worktree, remove_worktree, write_files, write_outcomes


def _restore(worktree: Path, paths: set[str], down: Downstream) -> None:
    """Put ``paths`` back as the downstream had them before the previous step wrote over them."""
    for p in paths:
        target = worktree / p
        original = down.content(p)
        if original is None:
            if target.exists() or target.is_symlink():
                target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(original)


def per_pr_commits(
    window: Window,
    upstream: Path,
    rules: Any,
    translate: Callable[[str, str], Translated],
    down: Downstream,
    prepare: tuple[Path, str, Path, str],
    console: Console,
    started: float,
    cache: TranslationCache,
):  # noqa: ANN201 - returns run.WindowResult (import cycle)
    from sync.window.run import WindowResult, reports_for, state_for

    downstream, branch, worktree, head = prepare
    create_worktree(downstream, branch, worktree, head)
    commits: list[str] = []
    outcomes: list[FileOutcome] = []
    try:
        touched: set[str] = set()
        with stage_progress(
            console, f"merge {len(window.commits)} PRs one by one", len(window.commits)
        ) as advance:
            for i, c in enumerate(window.commits, 1):
                labels = merge_labels(window.cutoff, c.sha)
                outcomes = [
                    plan_change(ch, rules, translate, down, labels)
                    for ch in changed_files(upstream, window.cutoff, c.sha)
                ]
                _restore(worktree, touched, down)
                now = set(write_outcomes(worktree, outcomes))
                msg = per_pr_message(window, i, c, outcomes)
                commits.append(
                    commit_paths(worktree, sorted(touched | now), msg, commit_date(upstream, c.sha))
                )
                touched |= now
                advance(f"#{c.pr}" if c.pr else c.sha[:8])
        questions, files = reports_for(window, branch, outcomes, downstream, head, state_for(window, rules))
        reports_rel = report_dir_name(window.from_pr, window.to_pr)
        msg = merge_message(window, outcomes, questions, reports_rel)
        commits.append(
            commit_paths(worktree, write_files(worktree, files), msg, commit_date(upstream, window.tip))
        )
    except Exception:
        remove_worktree(downstream, branch, worktree)
        raise
    return WindowResult(
        window, branch, worktree, worktree / reports_rel, outcomes, questions, commits, outcome_totals(outcomes),
        cache.hits, cache.misses, time.perf_counter() - started,
    )  # fmt: skip
