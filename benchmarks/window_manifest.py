"""A window's whole output as a normalized manifest, so a refactor of sync/ can show it changed nothing.

Runs a window in a scratch directory, on the embedded demo (``--demo``) or on real slime
#2014..#2125 (``--slime``: the downstream and its edits built as ``bench_window.py`` builds them),
then writes one JSON file:

- the branch name, and every commit the window added (``main..branch``, oldest first): its tree id,
  parent count and full message;
- every file of the branch tip under ``.vime-sync/`` and the report folder (path, mode, sha256),
  which holds the reports, the ledger, the state file and the recorded decisions;
- ``git status --porcelain`` of the worktree (empty when everything was committed);
- the in-memory result: outcome per file, questions (id, kind, tier, file, options, default),
  headline counts;
- then the same after the questions are answered (Decide -> ours, or keep) and ``resolve`` ran.

Left out, because they differ from run to run: commit ids and author/committer dates (the tree ids
and messages are kept), the per-stage seconds and cache figures of the result. The window runs
without ``--timings``, so SUMMARY.md holds no seconds. Run it before and after a change at the same
``--scratch`` path (reports name no absolute paths, but this keeps it certain) and ``diff`` the two.

The code under test is whatever ``sync`` imports as (``PYTHONPATH=/path/to/checkout`` measures
another checkout); ``bench_window.py`` is taken from that same checkout.
Usage: .venv/bin/python benchmarks/window_manifest.py (--demo | --slime) --scratch DIR --out FILE [--per-pr]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import sync


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True)
    return out.stdout.decode("utf-8", "replace")


def bench_window_module() -> Any:
    """``benchmarks/bench_window.py`` of the checkout ``sync`` comes from (its downstream builder)."""
    path = Path(sync.__file__).resolve().parents[1] / "benchmarks" / "bench_window.py"
    spec = importlib.util.spec_from_file_location("bench_window_under_test", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def branch_snapshot(worktree: Path, base: str = "main") -> dict[str, Any]:
    """Commits ``base..HEAD`` (tree, parents, message) and the tip's sync files with their sha256."""
    commits = []
    for sha in git(worktree, "rev-list", "--reverse", f"{base}..HEAD").split():
        commits.append({
            "tree": git(worktree, "rev-parse", f"{sha}^{{tree}}").strip(),
            "parents": len(git(worktree, "rev-list", "--parents", "-n1", sha).split()) - 1,
            "message": git(worktree, "log", "-1", "--format=%B", sha),
        })  # fmt: skip
    files = {}
    for line in git(worktree, "ls-tree", "-r", "HEAD").splitlines():
        meta, path = line.split("\t", 1)
        mode, _, oid = meta.split()
        if path.startswith((".vime-sync/", "reports/")):
            data = subprocess.run(["git", "-C", str(worktree), "cat-file", "blob", oid],
                                  capture_output=True, check=True).stdout  # fmt: skip
            files[path] = f"{mode} {hashlib.sha256(data).hexdigest()}"
    status = git(worktree, "status", "--porcelain", "--untracked-files=all")
    return {"commits": commits, "sync_files": files, "status": status.splitlines()}


def result_snapshot(result: Any) -> dict[str, Any]:
    outcomes = [
        [o.path, o.upstream_path, str(o.outcome), o.conflicts, o.structural_hunks, o.renamed_from, o.note,
         hashlib.sha256(o.data).hexdigest() if o.data is not None else None]
        for o in sorted(result.outcomes, key=lambda o: o.path)
    ]  # fmt: skip
    questions = [
        [q.id, str(q.kind), str(q.tier), q.file, [str(x) for x in q.options], q.default and str(q.default),
         q.key, q.summary, len(q.sites)]
        for q in result.questions
    ]  # fmt: skip
    return {
        "branch": result.branch,
        "counts": dict(result.counts),
        "outcomes": outcomes,
        "questions": questions,
    }


def answer_and_resolve(result: Any) -> dict[str, Any]:
    """Decide -> ours (or keep where that is the option), the rest their defaults; then resolve."""
    from sync.window.resolve import resolve_branch

    path = result.report_dir / "decisions.json"
    doc = json.loads(path.read_text())
    for q in doc["questions"]:
        if q["tier"] == "Decide":
            q["decision"] = "ours" if "ours" in q["options"] else "keep"
    path.write_text(json.dumps(doc, indent=2))
    resolved = resolve_branch(result.worktree)
    return {"applied": dict(sorted(resolved.applied.items())), "branch": branch_snapshot(result.worktree)}


def demo_window(scratch: Path, per_pr: bool) -> Any:
    from sync.demo.build import build_demo
    from sync.window import run_window

    repos = build_demo(scratch)
    return run_window(
        repos.upstream, repos.downstream, to_pr=repos.to_pr, from_pr=repos.from_pr, per_pr=per_pr
    )


def slime_window(scratch: Path, per_pr: bool, mirror: str) -> Any:
    from sync.rules import load_rules
    from sync.window import run_window
    from sync.window.history import find_pr_commit, first_parent_log

    bench = bench_window_module()
    up, down = scratch / "slime", scratch / "vime"
    subprocess.run(["git", "clone", "-q", "--no-checkout", mirror, str(up)], check=True)
    rules = load_rules()
    history = first_parent_log(up, "HEAD")
    cutoff = find_pr_commit(history, bench.FROM_PR - 1).sha
    tip = find_pr_commit(history, bench.TO_PR).sha
    files = bench.build_downstream(up, down, cutoff, rules)
    overlap, apart, outside, renamed, adjacent = bench.plan_edits(up, cutoff, tip, rules, files)
    for rel, data in {**overlap, **apart, **outside, **renamed, **adjacent}.items():
        (down / rel).write_bytes(data)
    bench.sh(down, "commit", "-q", "-a", "-m", "vime edits")
    return run_window(up, down, to_pr=bench.TO_PR, from_pr=bench.FROM_PR, per_pr=per_pr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--demo", action="store_true", help="the embedded demo window #111..#122")
    which.add_argument(
        "--slime", action="store_true", help="real slime #2014..#2125 (CPU-heavy: take the lock)"
    )
    ap.add_argument("--mirror", default="/work/.mirror/THUDM+slime/repo")
    ap.add_argument(
        "--scratch", required=True, type=Path, help="emptied first; use the same path before/after"
    )
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--per-pr", action="store_true", help="one commit per PR (window --per-pr)")
    args = ap.parse_args()
    shutil.rmtree(args.scratch, ignore_errors=True)
    args.scratch.mkdir(parents=True)
    print(f"sync under test: {Path(sync.__file__).resolve().parent}", file=sys.stderr)
    result = (
        slime_window(args.scratch, args.per_pr, args.mirror)
        if args.slime
        else demo_window(args.scratch, args.per_pr)
    )
    manifest = {
        "window": f"#{result.window.from_pr}..#{result.window.to_pr}",
        "per_pr": args.per_pr,
        "result": result_snapshot(result),
        "branch": branch_snapshot(result.worktree),
        "after_resolve": answer_and_resolve(result),
    }
    text = json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False)
    text = text.replace(str(args.scratch.resolve()), "<scratch>")
    args.out.write_text(text + "\n")
    print(f"{args.out}: {len(result.outcomes)} files, {len(result.questions)} questions, "
          f"{len(manifest['branch']['commits'])} commits, sha256 {hashlib.sha256(text.encode()).hexdigest()[:16]}")  # fmt: skip


if __name__ == "__main__":
    main()
