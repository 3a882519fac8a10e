"""The window's reports and the commit that carries them: one definition for both window modes.

A whole window writes its merged files and the reports in commit 1; ``--per-pr`` has committed the
files PR by PR and adds the reports in a final commit. Both build the reports from the tip's merge
and commit them under the window's merge message, dated at the tip.
"""

from __future__ import annotations

from sync.gitio import commit_date
from sync.window.messages import merge_message
from sync.window.result import reports_for, state_for
from sync.window.window_run import WindowRun
from sync.window.worktree import clear_stale, write_files


def build_reports(run: WindowRun) -> None:
    """The questions and report files of the whole window, from ``run.outcomes`` (the tip's merge)."""
    state = state_for(run.window, run.rules)
    run.questions, run.files = reports_for(
        run.window, run.branch, run.outcomes, run.downstream, run.head, state, run.rules,
        run.window_provenance(), timings=run.timings if run.with_timings else None,
    )  # fmt: skip


def write_reports(run: WindowRun, touched: list[str]) -> tuple[list[str], str, str]:
    """Write the report files into the worktree (an earlier run's report files go); returns what the
    commit takes: ``touched`` with them, the window's merge message and the tip's date. The caller
    commits (``commit_paths``), so each stage's commit stays its own step."""
    written = touched + write_files(run.worktree, run.files)
    written += clear_stale(run.worktree, run.reports_rel, run.files)
    message = merge_message(run.window, run.outcomes, run.questions, run.reports_rel)
    return written, message, commit_date(run.upstream, run.window.tip)
