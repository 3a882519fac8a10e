"""Kill a real ``vime-sync`` process with SIGKILL at each point of its run, then take the way out it
prints and run again: the result must be the tree and commit id of an uninterrupted run.

SIGKILL runs no handler and no rollback, so this is what the OOM killer, ``kill -9`` or a CI timeout
leaves. The child process is the real console entry (``sync.cli.run``); only the moment of death is
arranged here, by a hook that SIGKILLs the process group:

- ``stage:NAME``: at the boundary before stage NAME (``transaction.BOUNDARY_HOOKS``);
- ``write:N``: right after the N-th file write inside the sync worktree;
- ``after:MODULE.FUNC``: right after FUNC returns (e.g. the commit, before the run ends);
- ``in:worktree-add``: while ``git worktree add`` itself runs (its worktree locked, half checked out);
- ``in:worktree-add-empty-commondir``: the one such state that breaks plain ``git branch`` (an empty
  ``commondir`` in the worktree's admin folder), made on purpose rather than by the kill's timing.

Used by ``tests/test_sync_kill_stages.py`` on small repositories, and as a script on a real slime
window in a scratch folder (a clone of slime, and translate(slime at the cutoff) as the downstream, built as
``benchmarks/bench_window.py`` builds it)::

    python tests/kill_drill.py --mirror /work/.mirror/THUDM+slime/repo --scratch /tmp/drill --from 2014 --to 2125
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

# the product's own check: a ref look-up, which a worktree admin folder left half-written by a killed
# `git worktree add` (an empty commondir) cannot break, where plain `git branch --list` dies
from sync.window.worktree import branch_exists

WINDOW_POINTS = (
    "stage:translate",
    "stage:merge",
    "stage:reports",
    "stage:worktree",
    "in:worktree-add",
    "in:worktree-add-empty-commondir",
    "stage:commit",
    "write:3",
    "after:sync.window.run.commit_paths",
)
PER_PR_POINTS = (
    "stage:pr commits",
    "write:2",
    "after:sync.window.perpr.commit_paths",
    "stage:reports commit",
)
RESOLVE_POINTS = (
    "stage:apply",
    "write:1",
    "stage:record",
    "stage:commit",
    "after:sync.window.resolve.commit_paths",
    "stage:gate",
)

_CHILD = r"""
import os, signal, subprocess, sys, time
from pathlib import Path
point, args = sys.argv[1], sys.argv[2:]


def die():
    os.killpg(os.getpgrp(), signal.SIGKILL)


kind, _, what = point.partition(":")
if kind == "stage":
    from sync.window.transaction import BOUNDARY_HOOKS
    BOUNDARY_HOOKS.append(lambda name: name == what and die())
elif kind == "write":
    count, real, root = [0], Path.write_bytes, os.environ["KILL_DRILL_ROOT"]

    def write_bytes(self, data):
        out = real(self, data)
        if str(self.absolute()).startswith(root + os.sep):
            count[0] += 1
            if count[0] == int(what):
                die()
        return out

    Path.write_bytes = write_bytes
elif kind == "after":
    import importlib
    module, _, name = what.rpartition(".")
    mod = importlib.import_module(module)
    real_fn = getattr(mod, name)

    def wrapped(*a, **k):
        out = real_fn(*a, **k)
        die()
        return out

    setattr(mod, name, wrapped)
elif kind == "in" and what == "worktree-add":
    import sync.window.run as run_mod
    from sync.gitio import git_text

    def create_worktree(downstream, branch, path, start):
        proc = subprocess.Popen(["git", "-C", str(downstream), "worktree", "add", "--quiet", "-b", branch, str(path), start])
        common = Path(git_text(downstream, "rev-parse", "--absolute-git-dir"))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if any((d / "locked").exists() for d in (common / "worktrees").glob("*")) or proc.poll() is not None:
                die()
            time.sleep(0.0005)
        die()

    run_mod.create_worktree = create_worktree
elif kind == "in" and what == "worktree-add-empty-commondir":
    # the state a kill inside `git worktree add` left on CI: the admin folder's commondir created
    # but not yet written, so plain `git branch` dies reading it; made here on purpose, not by luck
    import sync.window.run as run_mod
    from sync.gitio import git_text

    def create_worktree(downstream, branch, path, start):
        subprocess.run(["git", "-C", str(downstream), "worktree", "add", "--quiet", "-b", branch, str(path), start], check=True)
        common = Path(git_text(downstream, "rev-parse", "--absolute-git-dir"))
        admin = next(d for d in (common / "worktrees").iterdir() if (d / "gitdir").read_text().strip() == str(Path(path) / ".git"))
        (admin / "commondir").write_text("")
        (admin / "locked").write_text("initializing\n")
        die()

    run_mod.create_worktree = create_worktree
sys.argv = ["vime-sync", *args]
from sync.cli import run
run()
"""


@dataclass
class Round:
    point: str
    killed: bool
    left: str
    next_line: str
    way_out: str
    same: bool
    seconds: float


@dataclass
class Drill:
    reference: str
    tree: str
    rounds: list[Round] = field(default_factory=list)


def vime_sync(
    *args: str, env: dict[str, str] | None = None, timeout: int = 1800
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sync.cli", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def killed_run(point: str, args: list[str], root: Path, timeout: int = 1800) -> int:
    """Run ``vime-sync ARGS`` in its own process group and SIGKILL it at ``point`` (``write:N`` counts
    writes under ``root``, the sync worktree); its return code."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, point, *args], start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "KILL_DRILL_ROOT": str(root)},
    )  # fmt: skip
    return proc.wait(timeout=timeout)


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if done.returncode:
        raise AssertionError(
            f"git {' '.join(args)} in {repo} exited {done.returncode}: {done.stderr.strip()}"
        )
    return done.stdout.strip()


def left_behind(downstream: Path, branch: str, worktree: Path) -> str:
    """What a killed run left: branch, worktree (and whether its files are dirty), journal."""
    parts = []
    if branch_exists(downstream, branch):
        parts.append("branch")
    if worktree.exists():
        dirty = subprocess.run(
            ["git", "-C", str(worktree), "status", "--porcelain"], capture_output=True, text=True
        )
        parts.append("worktree" + (" (dirty)" if dirty.stdout.strip() else ""))
    common = Path(_git(downstream, "rev-parse", "--absolute-git-dir"))
    if (common / "vime-sync/journal/journal.json").exists():
        parts.append("journal")
    return ", ".join(parts) or "nothing"


def remove_window(downstream: Path, branch: str, worktree: Path) -> None:
    if worktree.exists():
        _git(downstream, "worktree", "remove", "--force", "--force", str(worktree))
    _git(downstream, "worktree", "prune")
    if branch_exists(downstream, branch):
        _git(downstream, "branch", "-D", branch)


def by_hand(line: str) -> str:
    """The shell commands after "by hand:" in a way-out line."""
    return line.split("(by hand: ", 1)[1].rsplit(")", 1)[0]


def window_drill(
    upstream: Path, downstream: Path, window: list[str], branch: str, worktree: Path,
    points: tuple[str, ...] = WINDOW_POINTS, hand_points: tuple[str, ...] = (), report=print,
) -> Drill:  # fmt: skip
    """Kill a window at each point; the next run's line, its way out (``--repair``, or the git commands it
    names for ``hand_points``), a rerun: same commit id and tree as the uninterrupted reference."""
    args = [
        "window",
        "--upstream",
        str(upstream),
        "--downstream",
        str(downstream),
        *window,
        "--worktree",
        str(worktree),
    ]
    done = vime_sync(*args)
    assert done.returncode == 0, done.stderr
    drill = Drill(_git(downstream, "rev-parse", branch), _git(downstream, "rev-parse", f"{branch}^{{tree}}"))
    report(f"reference: {branch} at {drill.reference[:12]} (tree {drill.tree[:12]})")
    remove_window(downstream, branch, worktree)
    for point in points:
        started = time.perf_counter()
        rc = killed_run(point, args, worktree)
        left = left_behind(downstream, branch, worktree)
        nxt = vime_sync(*args)
        line = (nxt.stderr.strip().splitlines() or [""])[-1]
        complete = nxt.returncode != 0 and "already exists" in line
        if nxt.returncode == 0:  # nothing was left half-made (killed before the first write)
            way = "none needed"
        elif complete:  # killed after its final commit: the window is there, complete
            way = "none needed (the window was complete)"
        elif point in hand_points and "(by hand: " in line:
            subprocess.run(["bash", "-c", by_hand(line)], check=True, capture_output=True)
            way = "the git commands it printed"
        else:
            fixed = vime_sync("window", "--repair", "--downstream", str(downstream))
            assert fixed.returncode == 0, (point, fixed.stderr)
            way = "vime-sync window --repair"
        if nxt.returncode != 0 and not complete:
            again = vime_sync(*args)
            assert again.returncode == 0, (point, again.stderr)
        same = _git(downstream, "rev-parse", branch) == drill.reference
        same = same and _git(downstream, "rev-parse", f"{branch}^{{tree}}") == drill.tree
        drill.rounds.append(
            Round(point, rc == -signal.SIGKILL, left, line, way, same, time.perf_counter() - started)
        )
        report(f"{point}: {'SIGKILL' if rc == -signal.SIGKILL else f'exit {rc}'}; left {left}; next run: "
               f"{line[:160] or 'ran'}; way out: {way}; rerun {'same' if same else 'DIFFERENT'} commit")  # fmt: skip
        remove_window(downstream, branch, worktree)
    return drill


def resolve_drill(
    worktree: Path, answers: dict, points: tuple[str, ...] = RESOLVE_POINTS, gate: bool = False, report=print
) -> Drill:
    """Kill resolve at each point; ``resolve --repair``; resolve again: the same commit as uninterrupted."""
    downstream = Path(_git(worktree, "rev-parse", "--path-format=absolute", "--git-common-dir")).parent
    first = _git(worktree, "rev-parse", "HEAD")
    report_dir = next(worktree.glob("reports/slime-*"))
    args = ["resolve", "--worktree", str(worktree), *([] if gate else ["--no-gate"])]

    def reset() -> None:
        _git(worktree, "reset", "-q", "--hard", first)
        _git(worktree, "clean", "-q", "-fd", "--", ".")
        (report_dir / "decisions.json").write_text(json.dumps(answers, indent=2))

    reset()
    done = vime_sync(*args)
    assert done.returncode in (0, 1), done.stderr  # 1: the gate failed (its result is committed)
    drill = Drill(_git(worktree, "rev-parse", "HEAD"), _git(worktree, "rev-parse", "HEAD^{tree}"))
    report(f"resolve reference: {drill.reference[:12]}")
    for point in points:
        reset()
        started = time.perf_counter()
        rc = killed_run(point, args, worktree)
        left = left_behind(downstream, _git(worktree, "rev-parse", "--abbrev-ref", "HEAD"), worktree)
        nxt = vime_sync(*args)
        line = (nxt.stderr.strip().splitlines() or [""])[-1]
        way = "none needed"
        if "--repair" in line:
            fixed = vime_sync("resolve", "--repair", "--worktree", str(worktree))
            assert fixed.returncode == 0, (point, fixed.stderr)
            way = "vime-sync resolve --repair"
            again = vime_sync(*args)
            assert again.returncode in (0, 1), (point, again.stderr)
        same = _git(worktree, "rev-parse", "HEAD") == drill.reference
        drill.rounds.append(
            Round(point, rc == -signal.SIGKILL, left, line, way, same, time.perf_counter() - started)
        )
        report(f"{point}: {'SIGKILL' if rc == -signal.SIGKILL else f'exit {rc}'}; left {left}; next run: "
               f"{line[:160] or 'ran'}; way out: {way}; rerun {'same' if same else 'DIFFERENT'} commit")  # fmt: skip
    reset()
    return drill


def scratch_repos(mirror: Path, scratch: Path, from_pr: int) -> tuple[Path, Path]:
    """A clone of slime and, as the downstream, translate(slime at PR #from-1) committed (bench_window.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_window import build_downstream

    from sync.rules import load_rules
    from sync.window.history import find_pr_commit, first_parent_log

    up, down = scratch / "slime", scratch / "vime"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(mirror), str(up)], check=True)
    cutoff = find_pr_commit(first_parent_log(up, "HEAD"), from_pr - 1)
    assert cutoff is not None, f"PR #{from_pr - 1} is not on the mirror's first-parent history"
    build_downstream(up, down, cutoff.sha, load_rules())
    return up, down


def answered(worktree: Path) -> dict:
    """The window's decisions.json with every Decide question answered (ours, else the first option)."""
    doc = json.loads(next(worktree.glob("reports/slime-*/decisions.json")).read_text())
    for q in doc["questions"]:
        if q["tier"] == "Decide":
            q["decision"] = "ours" if "ours" in q["options"] else q["options"][0]
    return doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror", type=Path, required=True, help="a slime repository (cloned into --scratch)")
    ap.add_argument(
        "--scratch", type=Path, required=True, help="an empty folder for the clone and downstream"
    )
    ap.add_argument("--from", dest="from_pr", type=int, required=True)
    ap.add_argument("--to", dest="to_pr", type=int, required=True)
    ap.add_argument("--per-pr", action="store_true")
    a = ap.parse_args()
    started = time.perf_counter()
    up, down = scratch_repos(a.mirror.resolve(), a.scratch.resolve(), a.from_pr)
    branch = f"sync/slime-{a.from_pr}-{a.to_pr}"
    worktree = down.parent / f"vime-sync-{a.from_pr}-{a.to_pr}"
    window = ["--from", str(a.from_pr), "--to", str(a.to_pr), *(["--per-pr"] if a.per_pr else [])]
    points = PER_PR_POINTS if a.per_pr else WINDOW_POINTS
    drill = window_drill(
        up, down, window, branch, worktree, points, hand_points=("in:worktree-add", "stage:commit")
    )
    args = ["window", "--upstream", str(up), "--downstream", str(down), *window, "--worktree", str(worktree)]
    done = vime_sync(*args)
    assert done.returncode == 0, done.stderr
    again = resolve_drill(worktree, answered(worktree))
    rounds = drill.rounds + again.rounds
    print(
        f"window: {len(drill.rounds)} kill points, {sum(r.killed for r in drill.rounds)} killed by SIGKILL, "
        f"{sum(r.same for r in drill.rounds)} reruns gave the reference commit {drill.reference[:12]} "
        f"(tree {drill.tree[:12]}); resolve: {len(again.rounds)} kill points, "
        f"{sum(r.killed for r in again.rounds)} killed, {sum(r.same for r in again.rounds)} reruns gave "
        f"{again.reference[:12]}; {time.perf_counter() - started:.0f} s"
    )
    sys.exit(0 if all(r.same for r in rounds) else 1)


if __name__ == "__main__":
    os.environ.setdefault("VIME_SYNC_JOBS", "2")
    main()
