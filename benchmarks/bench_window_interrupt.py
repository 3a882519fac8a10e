"""Benchmark: how fast `vime-sync window` stops on Ctrl-C, and that it leaves nothing behind.

Real slime history, window #2014..#2125, cold translation cache (so the parallel pre-pass runs),
in a scratch directory; downstream = translate(slime at #2013) as in bench_window.py. The CLI runs
in its own process group: first uninterrupted (the reference, same run), then interrupted by a
Ctrl-C (SIGINT to the group, as a terminal sends it) at 15 %, 30 % and 45 % of the reference's
median wall time. For each: the time from the signal to the process's exit, the exit code, whether
refs/worktrees/status/cache of the downstream are as before, and whether any process of the group
is left. Medians over --repeats.

Nothing of slime is written outside the scratch directory.
Usage: .venv/bin/python benchmarks/bench_window_interrupt.py [--mirror PATH] [--scratch DIR] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_window import FROM_PR, TO_PR, build_downstream, sh

from sync.rules import load_rules
from sync.window.history import find_pr_commit, first_parent_log

FRACTIONS = (0.15, 0.3, 0.45)


def state(down: Path) -> tuple[str, str, str, bool]:
    cache = down / ".git" / "vime-sync-cache"
    return (
        sh(down, "for-each-ref"),
        sh(down, "worktree", "list", "--porcelain"),
        sh(down, "status", "--porcelain", "--untracked-files=all"),
        cache.exists() and any(p.is_file() for p in cache.rglob("*")),
    )


def group_alive(pgid: int) -> list[str]:
    """Live (non-zombie) processes of the run's process group, as "pid state command"."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (
                (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ")[:60].decode(errors="replace")
            )
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(f"{stat.parent.name} {fields[0]} {command}")
    return alive


def reset(down: Path) -> None:
    shutil.rmtree(down / ".git" / "vime-sync-cache", ignore_errors=True)
    for line in sh(down, "worktree", "list", "--porcelain").splitlines()[1:]:
        if line.startswith("worktree "):
            sh(down, "worktree", "remove", "--force", line.split(" ", 1)[1])
    for branch in sh(down, "branch", "--list", "sync/*", "--format=%(refname:short)").splitlines():
        sh(down, "branch", "-D", branch)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", default="/work/.mirror/THUDM+slime/repo")
    ap.add_argument("--scratch", default=None)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="vime-bench-interrupt-"))
    up, down = scratch / "slime", scratch / "vime"
    print(f"scratch: {scratch}; load {os.getloadavg()[0]:.2f}; cores {len(os.sched_getaffinity(0))}")
    sh(scratch, "clone", "-q", "--no-checkout", args.mirror, str(up))
    history = first_parent_log(up, "HEAD")
    build_downstream(up, down, find_pr_commit(history, FROM_PR - 1).sha, load_rules())
    cmd = [sys.executable, "-m", "sync.cli", "window", "--upstream", str(up), "--downstream", str(down),
           "--from", str(FROM_PR), "--to", str(TO_PR)]  # fmt: skip

    full = []
    for _ in range(args.repeats):
        reset(down)
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        full.append(time.perf_counter() - t)
    ref = statistics.median(full)
    print(f"uninterrupted cold window: median {ref:.2f} s ({', '.join(f'{x:.2f}' for x in full)})")

    for frac in FRACTIONS:
        stops, clean, left, codes = [], 0, 0, []
        for _ in range(args.repeats):
            reset(down)
            before = state(down)
            proc = subprocess.Popen(
                cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            time.sleep(frac * ref)
            os.killpg(proc.pid, signal.SIGINT)
            t = time.perf_counter()
            proc.communicate(timeout=120)
            took = time.perf_counter() - t
            time.sleep(0.5)
            survivors = group_alive(proc.pid)
            if survivors:
                time.sleep(3)
                print(f"  left 0.5 s after exit: {survivors}; 3 s later: {group_alive(proc.pid)}")
            left += len(survivors)
            codes.append(proc.returncode)
            if proc.returncode != 0:  # interrupted (0: it had finished before the signal)
                stops.append(took)
                clean += state(down) == before
        stop = (
            f"stop median {statistics.median(stops):.2f} s ({statistics.median(stops) / ref:.1%} of the full run; "
            + (", ".join(f"{x:.2f}" for x in stops) + ")")
            if stops
            else "no run interrupted"
        )
        print(
            f"Ctrl-C at {frac:.0%}: {stop}; exit codes {codes}; downstream unchanged {clean}/{len(stops)}; "
            f"processes left {left}"
        )
    reset(down)
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
