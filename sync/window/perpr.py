"""``--per-pr``: one commit per upstream PR in merge order, so a reviewer can bisect the window.

Step i holds the merge of cutoff..commit_i (the same per-file merge as the whole window, on a
shorter range); the last step equals the whole-window tree. Reports and state come in a final commit.
The stages take the window run's shared context (``window_run.WindowRun``) and run in its transaction.
"""

from __future__ import annotations

from pathlib import Path

from sync.gitio import commit_date
from sync.window.changes import changed_files
from sync.window.messages import per_pr_message
from sync.window.plan import Downstream, merge_labels, plan_change
from sync.window.progress import stage_progress
from sync.window.reports_stage import build_reports, write_reports
from sync.window.window_run import WindowRun
from sync.window.worktree import commit_paths, write_outcomes


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
            target.chmod(0o755 if down.mode(p, "100644") == "100755" else 0o644)


def stage_pr_commits(run: WindowRun) -> None:
    """One commit per upstream commit of the window, each the merge of cutoff..that commit."""
    window, touched = run.window, set()
    with stage_progress(
        run.console, f"merge {len(window.commits)} PRs one by one", len(window.commits)
    ) as advance:
        for i, c in enumerate(window.commits, 1):
            labels = merge_labels(window.cutoff, c.sha)
            steps = run.step_changes.get(c.sha) or changed_files(run.upstream, window.cutoff, c.sha)
            run.outcomes = [plan_change(ch, run.rules, run.translate, run.down, labels) for ch in steps]
            _restore(run.worktree, touched, run.down)
            now = set(write_outcomes(run.worktree, run.outcomes))
            msg = per_pr_message(window, i, c, run.outcomes)
            run.commits.append(
                commit_paths(run.worktree, sorted(touched | now), msg, commit_date(run.upstream, c.sha))
            )
            touched |= now
            advance(f"#{c.pr}" if c.pr else c.sha[:8])


def stage_reports_commit(run: WindowRun) -> None:
    """The final commit: reports and state for the whole window (the files are in the PR commits), as
    the whole window's reports and commit 1 make them."""
    build_reports(run)
    run.commits.append(commit_paths(run.worktree, *write_reports(run, [])))
