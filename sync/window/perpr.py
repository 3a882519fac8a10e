"""``--per-pr``: one commit per upstream PR in merge order, so a reviewer can bisect the window.

Step i holds the merge of cutoff..commit_i (the same per-file merge as the whole window, on a
shorter range); the last step equals the whole-window tree. Reports and state come in a final commit.
The stages take the window run's shared context (``run.WindowRun``) and run in its transaction.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sync.window.changes import changed_files
from sync.window.gitio import commit_date
from sync.window.messages import merge_message, per_pr_message
from sync.window.plan import Downstream, merge_labels, plan_change
from sync.window.progress import stage_progress
from sync.window.provenance import WindowProvenance
from sync.window.result import reports_for, state_for
from sync.window.transaction import Stage
from sync.window.worktree import commit_paths, write_files, write_outcomes


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


def stage_pr_commits(run: Any) -> None:
    """One commit per upstream commit of the window, each the merge of cutoff..that commit."""
    window, touched = run.window, set()
    with stage_progress(
        run.console, f"merge {len(window.commits)} PRs one by one", len(window.commits)
    ) as advance:
        for i, c in enumerate(window.commits, 1):
            labels = merge_labels(window.cutoff, c.sha)
            run.outcomes = [
                plan_change(ch, run.rules, run.translate, run.down, labels)
                for ch in changed_files(run.upstream, window.cutoff, c.sha)
            ]
            _restore(run.worktree, touched, run.down)
            now = set(write_outcomes(run.worktree, run.outcomes))
            msg = per_pr_message(window, i, c, run.outcomes)
            run.commits.append(
                commit_paths(run.worktree, sorted(touched | now), msg, commit_date(run.upstream, c.sha))
            )
            touched |= now
            advance(f"#{c.pr}" if c.pr else c.sha[:8])


def stage_reports_commit(run: Any) -> None:
    """The final commit: reports and state for the whole window."""
    state = state_for(run.window, run.rules)
    provenance = WindowProvenance(run.upstream, run.window, run.translate)
    run.questions, run.files = reports_for(
        run.window, run.branch, run.outcomes, run.downstream, run.head, state, run.rules, provenance
    )
    msg = merge_message(run.window, run.outcomes, run.questions, run.reports_rel)
    date = commit_date(run.upstream, run.window.tip)
    run.commits.append(commit_paths(run.worktree, write_files(run.worktree, run.files), msg, date))


PER_PR_STAGES: list[Stage] = [("pr commits", stage_pr_commits), ("reports commit", stage_reports_commit)]
