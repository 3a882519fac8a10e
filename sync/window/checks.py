"""Every check a window makes before its first write: bad input is refused and nothing changes.

Each check raises ``SyncError`` with one line naming the thing at fault and the fix.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from sync.collisions import find_collisions, involving, landing_path, refusal
from sync.gitio import GitError, dirty_paths, git, git_text, is_ancestor, is_git_repo, ls_tree, rev_parse
from sync.layout import LAYOUT_FILE, Layout, LayoutError, parse_layout
from sync.model.errors import SyncError
from sync.window.changes import UpstreamChange
from sync.window.history import Window
from sync.window.state import STATE_PATH, SyncState

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


def downstream_layout(downstream: Path, rev: str = "HEAD") -> Layout:
    """The layout map committed in the downstream at ``rev`` (mirror everything when it has none)."""
    try:
        data = git(downstream, "show", f"{rev}:{LAYOUT_FILE}")
    except GitError:
        return Layout()
    try:
        return parse_layout(data.decode("utf-8", "replace"))
    except LayoutError as exc:
        raise SyncError(str(exc)) from None


def checked_out_in(repo: Path, branch: str) -> Path | None:
    """The worktree that has ``branch`` checked out, if any."""
    current = None
    for line in git_text(repo, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            current = Path(line[len("worktree ") :])
        elif line == f"branch refs/heads/{branch}":
            return current
    return None


def _needed_paths(
    changes: list[UpstreamChange], rules: RuleSet, report_dir: str, layout: Layout | None = None
) -> set[str]:
    """Every downstream path the window reads or writes: mapped by the rules or by the layout map."""
    layout = layout or Layout()
    paths = {STATE_PATH, report_dir}
    for c in changes:
        for p in (c.old_path, c.new_path):
            if not p:
                continue
            place = layout.place(p)
            for mapped in (rules.map_path(p), place.to, landing_path(rules, layout, p)):
                if mapped:
                    paths.add(mapped)
    return paths


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def check_clean(
    downstream: Path,
    changes: list[UpstreamChange],
    rules: RuleSet,
    report_dir: str,
    layout: Layout | None = None,
) -> None:
    """No uncommitted edits in files the window merges (where the rules or the layout map put them),
    nor in the rule tables it translates with."""
    dirty = dirty_paths(downstream)
    rule_edits = sorted(p for p in dirty if _under(p, RULES_DIR))
    if rule_edits:
        raise SyncError(
            f"downstream has uncommitted edits in {RULES_DIR}/ ({', '.join(rule_edits[:3])}); the branch would "
            "record rules it was not made with: commit or stash them first"
        )
    needed = _needed_paths(changes, rules, report_dir, layout)
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


SPECIAL_MODES = ("120000", "160000")  # symlinks and submodules are never mirrored


def check_collisions(
    upstream: Path, tip: str, changes: list[UpstreamChange], rules: RuleSet, layout: Layout
) -> None:
    """Refuse a window in which a changed upstream file lands on the same downstream path as another
    upstream file (or on a file another needs as a folder): one would silently replace the other."""
    targets = {
        path: landing_path(rules, layout, path)
        for path, (mode, _oid) in ls_tree(upstream, tip).items()
        if mode not in SPECIAL_MODES
    }
    for c in changes:  # a deletion still writes (removes) its target
        if c.new_path is None and c.old_path and c.old_mode not in SPECIAL_MODES:
            targets[c.old_path] = landing_path(rules, layout, c.old_path)
    changed = {p for c in changes for p in (c.old_path, c.new_path) if p}
    hits = involving(find_collisions(targets), changed)
    if hits:
        raise SyncError(refusal(hits))


def check_paths_fit(
    downstream: Path, changes: list[UpstreamChange], rules: RuleSet, layout: Layout, report_dir: str
) -> None:
    """Refuse a window that would write a file where the downstream has a folder, or below a path the
    downstream has as a file (``vime/tools`` a file, upstream adds ``slime/tools/run.py``): the write
    can never succeed, so say which paths meet before anything is made."""
    tree = ls_tree(downstream, "HEAD")
    files = {p for p, (mode, _) in tree.items() if mode not in SPECIAL_MODES}  # a link: `inside` judges it
    removed = {landing_path(rules, layout, c.old_path) for c in changes if c.old_path}  # moved or deleted
    folders = {"/".join(p.split("/")[:i]) for p in tree for i in range(1, p.count("/") + 1)}
    wanted = [(c.new_path, landing_path(rules, layout, c.new_path)) for c in changes if c.new_path]
    wanted += [("the report folder", report_dir), ("the state file", STATE_PATH)]
    for source, target in wanted:
        if not target:
            continue
        if target in folders and target != report_dir:
            raise SyncError(
                f"{source} lands on {target}, which is a folder in the downstream; rename that folder "
                "downstream, or map the upstream path elsewhere in translations/layout.toml"
            )
        parts = target.split("/")
        for i in range(1, len(parts)):
            blocking = "/".join(parts[:i])
            if blocking in files and blocking not in removed:
                raise SyncError(
                    f"{source} lands on {target}, but the downstream has a file {blocking} where that needs a "
                    "folder; rename the file downstream, or map the upstream path elsewhere in "
                    "translations/layout.toml"
                )


def check_not_below_cutoff(upstream: Path, window: Window, state: SyncState) -> None:
    """Refuse a window that starts before the cutoff the state file records (its first PRs were synced
    already and would be merged a second time) unless the user asks to rewind."""
    if window.cutoff == state.cutoff or not is_ancestor(upstream, window.cutoff, state.cutoff):
        return
    synced = [c for c in window.commits if is_ancestor(upstream, c.sha, state.cutoff)]
    if not synced:
        return
    names = [f"#{c.pr}" if c.pr is not None else c.sha[:8] for c in synced]
    shown = ", ".join(names[:6]) + (" ..." if len(names) > 6 else "")
    raise SyncError(
        f"the window #{window.from_pr}..#{window.to_pr} reaches below the last sync (cutoff {state.cutoff[:8]}, "
        f"PR #{state.last_pr}, in {STATE_PATH}): {len(synced)} of its commits ({shown}) were synced already; "
        f"give --from {state.last_pr + 1} (or only --to N), or --rewind to sync them again"
    )
