"""Every check a window makes before its first write: bad input is refused and nothing changes.

Each check raises ``SyncError`` with one line naming the thing at fault and the fix.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from sync.window.changes import UpstreamChange
from sync.window.errors import SyncError
from sync.window.gitio import dirty_paths, git_text, is_git_repo, rev_parse
from sync.window.history import Window
from sync.window.state import STATE_PATH

if TYPE_CHECKING:
    from sync.rules import RuleSet

RULES_DIR = "translations"


def check_repos(upstream: Path, downstream: Path) -> None:
    if not is_git_repo(upstream):
        raise SyncError(f"upstream {upstream} is not a git repository; pass --upstream PATH to a slime clone")
    if not is_git_repo(downstream):
        raise SyncError(
            f"downstream {downstream} is not a git repository; pass --downstream PATH to a vime clone"
        )
    if git_text(downstream, "rev-parse", "--is-bare-repository") == "true":
        raise SyncError(f"downstream {downstream} is a bare repository; pass a checkout of vime")
    if rev_parse(downstream, "HEAD") is None:
        raise SyncError(f"downstream {downstream} has no commits yet; commit the vime tree first")


def toplevel(downstream: Path) -> Path:
    """The root of the downstream's working tree (a run from a subfolder works on the whole checkout)."""
    return Path(git_text(downstream, "rev-parse", "--show-toplevel")).resolve()


def git_common_dir(repo: Path) -> Path:
    """The repository's shared ``.git`` (the same for every worktree of it)."""
    path = Path(git_text(repo, "rev-parse", "--git-common-dir"))
    return (path if path.is_absolute() else repo / path).resolve()


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_writable(git_dir: Path, worktree: Path) -> None:
    """The downstream's .git and the worktree's parent folder must be writable before anything is made."""
    if not os.access(git_dir, os.W_OK):
        raise SyncError(
            f"downstream's {git_dir} is read-only; make it writable (vime-sync keeps its lock and cache there)"
        )
    parent = _nearest_existing(worktree.parent)
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise SyncError(
            f"cannot create the worktree {worktree}: {parent} is not a writable folder; pass --worktree PATH elsewhere"
        )


def check_worktree_path(downstream_top: Path, worktree: Path, git_dir: Path) -> None:
    """The sync worktree lives outside the user's checkout (and outside its .git)."""
    if worktree.exists() or worktree.is_symlink():
        raise SyncError(f"worktree path {worktree} already exists; remove it or pass --worktree PATH")
    for inside in (downstream_top, git_dir, *worktrees(downstream_top)):
        if worktree == inside or inside in worktree.parents:
            raise SyncError(
                f"--worktree {worktree} is inside the checkout {inside}; pass a path outside it "
                f"(e.g. {downstream_top.parent / (downstream_top.name + '-sync')})"
            )


def worktrees(repo: Path) -> list[Path]:
    """Every worktree of the repository (the main checkout and the sync worktrees of other windows)."""
    out = git_text(repo, "worktree", "list", "--porcelain")
    return [
        Path(line[len("worktree ") :]).resolve() for line in out.splitlines() if line.startswith("worktree ")
    ]


def _needed_paths(changes: list[UpstreamChange], rules: RuleSet, report_dir: str) -> set[str]:
    paths = {STATE_PATH, report_dir}
    for c in changes:
        for p in (c.old_path, c.new_path):
            mapped = rules.map_path(p) if p else None
            if mapped:
                paths.add(mapped)
    return paths


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def check_clean(downstream: Path, changes: list[UpstreamChange], rules: RuleSet, report_dir: str) -> None:
    """No uncommitted edits in files the window merges, nor in the rule tables it translates with."""
    dirty = dirty_paths(downstream)
    rule_edits = sorted(p for p in dirty if _under(p, RULES_DIR))
    if rule_edits:
        raise SyncError(
            f"downstream has uncommitted edits in {RULES_DIR}/ ({', '.join(rule_edits[:3])}); the branch would "
            "record rules it was not made with: commit or stash them first"
        )
    needed = _needed_paths(changes, rules, report_dir)
    clash = sorted(p for p in dirty if any(_under(p, n) for n in needed))
    if clash:
        more = f" (+{len(clash) - 3} more)" if len(clash) > 3 else ""
        raise SyncError(
            f"downstream has uncommitted changes in files this window merges: {', '.join(clash[:3])}{more}; "
            "commit or stash them first"
        )


def check_order(window: Window) -> None:
    """Refuse a reversed window (``--to`` before ``--from``). A cutoff that merged after the tip is
    refused by ``resolve_window`` as empty; a PR numbered inside that merges later is normal."""
    if window.from_pr > window.to_pr:
        raise SyncError(
            f"reversed window: --from {window.from_pr} is after --to {window.to_pr}; pass --to N with N >= {window.from_pr}"
        )
