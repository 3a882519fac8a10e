"""Which upstream PRs ``follow`` takes next: first-parent merge order after the cutoff, one PR a step.

A direct push (a first-parent commit with no PR number) goes with the PR merged after it, since a
window, its branch and its report folder are named by PR numbers; one at the very tip waits for
the next PR. A PR number merged twice is taken at each of its merges (by commit, not by number).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sync.gitio import rev_parse
from sync.model.errors import SyncError
from sync.window.history import UpstreamCommit, Window, find_pr_commit, first_parent_log


@dataclass(frozen=True)
class Step:
    """One PR ``follow`` mirrors: its merge commit last, the direct pushes merged just before it first."""

    commits: tuple[UpstreamCommit, ...]

    @property
    def tip(self) -> UpstreamCommit:
        return self.commits[-1]

    @property
    def pr(self) -> int:
        assert self.tip.pr is not None
        return self.tip.pr

    @property
    def pushes(self) -> tuple[UpstreamCommit, ...]:
        return self.commits[:-1]

    @property
    def label(self) -> str:
        extra = f" (+{len(self.pushes)} direct push{'es' * (len(self.pushes) > 1)})" if self.pushes else ""
        return f"#{self.pr}{extra}"


@dataclass(frozen=True)
class Upcoming:
    """What lies after the cutoff: the steps (up to ``--until``) and direct pushes waiting for a PR."""

    steps: list[Step]
    waiting: list[UpstreamCommit]
    until_done: bool = False  # --until names a PR merged at or before the cutoff: mirrored already


def upcoming(upstream: Path, cutoff: str, until: int | None = None, upstream_ref: str = "HEAD") -> Upcoming:
    """Steps after ``cutoff`` in merge order, ending with PR ``until`` when given (none when it merged
    at or before the cutoff); SyncError when the cutoff is not on the first-parent history or
    ``until`` is not merged at all."""
    history = first_parent_log(upstream, upstream_ref)
    index = {c.sha: i for i, c in enumerate(history)}
    if cutoff not in index:
        raise SyncError(
            f"the cutoff {cutoff[:10]} is not on the first-parent history of {upstream_ref} in {upstream}; "
            "fetch the upstream, or pass --upstream-ref BRANCH"
        )
    after = history[index[cutoff] + 1 :]
    if until is not None:
        merged = find_pr_commit(history, until)
        if merged is None:
            raise SyncError(
                f"--until {until}: PR #{until} is not merged on the first-parent history of {upstream_ref}; "
                "check the number or fetch the upstream"
            )
        if index[merged.sha] <= index[cutoff] and not any(c.pr == until for c in after):
            return Upcoming([], [], until_done=True)
    steps: list[Step] = []
    pushes: list[UpstreamCommit] = []
    for c in after:
        if c.pr is None:
            pushes.append(c)
            continue
        steps.append(Step((*pushes, c)))
        pushes = []
        if until is not None and c.pr == until:
            return Upcoming(steps, [])
    return Upcoming(steps, pushes)


def step_window(upstream: Path, cutoff: str, step: Step) -> Window:
    """The window of one step: cutoff..the PR's merge commit, named #N..#N (resolved by commit, so a PR
    number merged twice takes the right merge)."""
    commits = first_parent_log(upstream, f"{cutoff}..{step.tip.sha}", with_files=True)
    if [c.sha for c in commits] != [c.sha for c in step.commits]:  # the upstream moved under us
        raise SyncError(
            f"the upstream's history between {cutoff[:10]} and #{step.pr} changed while follow ran; run it again"
        )
    return Window(step.pr, step.pr, cutoff, step.tip.sha, commits, [])


def cutoff_of(upstream: Path, from_pr: int | None, cutoff: str | None, upstream_ref: str) -> str:
    """The first run's cutoff, from ``--cutoff COMMIT`` or the commit of PR ``from - 1``."""
    if cutoff is not None:
        sha = rev_parse(upstream, cutoff)
        if sha is None:
            raise SyncError(f"--cutoff {cutoff!r} is not a commit of {upstream}; give a commit id")
        return sha
    assert from_pr is not None
    found = find_pr_commit(first_parent_log(upstream, upstream_ref), from_pr - 1)
    if found is None:
        raise SyncError(
            f"--from {from_pr}: PR #{from_pr - 1} (the cutoff) is not merged on the first-parent history of "
            f"{upstream_ref}; give --cutoff COMMIT"
        )
    return found.sha
