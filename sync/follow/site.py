"""Where ``follow`` works: the ``sync/follow`` branch in its own worktree, beside the user's checkout.

The first run makes the branch at the downstream's HEAD; a later run goes on from the branch's tip.
When the downstream merged the branch and moved on (the branch's tip is an ancestor of its HEAD),
the branch is fast-forwarded to that HEAD first, so the next PR merges onto the downstream's own
edits; when both moved, the user merges them (one line says how). Everything here is checked
before the first write; ``make`` writes, each write after registering its undo.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sync.gitio import GitError, git, git_text, is_ancestor, rev_parse
from sync.model.errors import SyncError
from sync.model.names import FOLLOW_BRANCH
from sync.window.checks import check_worktree_path, check_writable, git_common_dir, toplevel
from sync.window.transaction import Transaction
from sync.window.worktree import branch_exists, create_worktree


@dataclass
class FollowSite:
    """The follow branch and worktree as found (nothing made yet), and the commit the next PR builds on."""

    downstream: Path  # the user's checkout (never written)
    git_dir: Path
    worktree: Path
    branch_exists: bool
    worktree_exists: bool
    tip: str
    fast_forward_from: str | None = None  # the branch's tip, when it moves to the downstream's HEAD first

    @property
    def ready(self) -> bool:
        """Whether the worktree exists at ``tip`` already (nothing to make before the first write)."""
        return self.worktree_exists and self.fast_forward_from is None


def default_follow_worktree(downstream: Path) -> Path:
    return downstream.parent / f"{downstream.name}-sync-follow"


def branch_worktree(repo: Path, branch: str) -> Path | None:
    """The worktree that has ``branch`` checked out, if any."""
    path = None
    for line in git_text(repo, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            path = Path(line[len("worktree ") :])
        elif line == f"branch refs/heads/{branch}" and path is not None:
            return path.resolve()
    return None


def tracked_changes(worktree: Path, allowed: str | None = None) -> list[str]:
    """Tracked paths with uncommitted changes in ``worktree``, except under ``allowed`` (a pending
    PR's report folder, where the reviewer saves decisions.json)."""
    out = git_text(worktree, "status", "--porcelain", "--untracked-files=no")
    paths = [line[3:] for line in out.splitlines() if line]
    if allowed:
        paths = [p for p in paths if not p.startswith(allowed.rstrip("/") + "/")]
    return paths


def locate(downstream: Path, worktree: Path | None) -> FollowSite:
    """Find the branch and worktree (or where they will be made); refuse what follow cannot work with."""
    downstream = toplevel(downstream)
    git_dir = git_common_dir(downstream)
    exists = branch_exists(downstream, FOLLOW_BRANCH)
    current = branch_worktree(downstream, FOLLOW_BRANCH) if exists else None
    wanted = Path(worktree).resolve() if worktree is not None else None
    if current is not None and wanted is not None and wanted != current:
        raise SyncError(
            f"{FOLLOW_BRANCH} is checked out in {current}, not {wanted}; drop --worktree (or pass that path)"
        )
    path = current or wanted or default_follow_worktree(downstream)
    if current is None:
        check_worktree_path(downstream, path, git_dir)
        check_writable(git_dir, path)
    head = git_text(downstream, "rev-parse", "HEAD")
    if not exists:
        return FollowSite(downstream, git_dir, path, False, False, head)
    tip = rev_parse(downstream, f"refs/heads/{FOLLOW_BRANCH}")
    assert tip is not None
    site = FollowSite(downstream, git_dir, path, True, current is not None, tip)
    if head == tip or is_ancestor(downstream, head, tip):
        return site
    if is_ancestor(downstream, tip, head):
        site.fast_forward_from, site.tip = tip, head
        return site
    raise SyncError(
        f"{downstream.name}'s HEAD ({head[:10]}) and {FOLLOW_BRANCH} ({tip[:10]}) have both moved on; merge HEAD "
        f"into {FOLLOW_BRANCH} (git -C {path} merge {head[:10]}), commit, and run follow again"
    )


def make(tx: Transaction, site: FollowSite) -> None:
    """Create the branch and worktree, or the worktree alone, or fast-forward: each with its undo."""
    if not site.branch_exists:  # on the journal too: --repair removes them after a SIGKILL
        tx.undo_step(
            "worktree", f"branch {FOLLOW_BRANCH} and worktree {site.worktree}",
            repo=str(site.downstream), branch=FOLLOW_BRANCH, path=str(site.worktree),
        )  # fmt: skip
        _made(site, lambda: create_worktree(site.downstream, FOLLOW_BRANCH, site.worktree, site.tip))
    elif not site.worktree_exists:
        tx.undo(f"worktree {site.worktree}", lambda: _remove_worktree(site))
        _made(
            site,
            lambda: git(site.downstream, "worktree", "add", "--quiet", str(site.worktree), FOLLOW_BRANCH),
        )
    if site.fast_forward_from is not None:
        old = site.fast_forward_from
        tx.undo(
            f"{FOLLOW_BRANCH} back to {old[:10]}", lambda: git(site.worktree, "reset", "-q", "--keep", old)
        )
        git(site.worktree, "reset", "-q", "--keep", site.tip)  # a clean worktree: a fast-forward, no hooks
    site.branch_exists = site.worktree_exists = True
    site.fast_forward_from = None


def _made(site: FollowSite, add: Callable[[], object]) -> None:
    try:
        add()
    except GitError as exc:
        raise SyncError(
            f"could not create the worktree {site.worktree} ({exc}); fix that (a failing post-checkout hook, "
            "a read-only folder) and run again"
        ) from None


def _remove_worktree(site: FollowSite) -> None:
    """Undo the worktree ``make`` added for an existing branch (the branch stays)."""
    try:
        git(site.downstream, "worktree", "remove", "--force", str(site.worktree))
    except GitError:
        shutil.rmtree(site.worktree, ignore_errors=True)
        git(site.downstream, "worktree", "prune")
