"""Benchmark `vime-sync follow` over real slime history (#2014..#2298) and audit the result, in scratch.

downstream = translate(slime at #2013) plus vime's compat layer (``vime/compat/``, which translated
plugin code imports) and the downstream edits of bench_window.py (overlapping the range's changes,
beside them, outside the range, in a file upstream renames, next to a changed statement). Follow
mirrors PR by PR with the gate on; each stop is answered by one policy, and follow runs again:

    a Decide question on a file the downstream edited (vime owns it)  -> ours
    any other Decide question                                         -> theirs (keep, for line notes)
    a gate stop (new failures)   -> the failing files go to [static] exclude in .vime-sync/gate.toml,
                                    committed on the follow branch (a person accepting them as they are)
 Then `window --from 2014 --to 2298` on the same downstream, answered by the
same policy and resolved, and the two trees are compared (outside reports/ and .vime-sync/). Then
`audit` on both. Prints per-PR seconds (from the ledger's follow cells: machine time, not the
person's), PRs with no person, stops, median and worst, the tree comparison and the audit figures,
and writes them as JSON. The cache starts empty (``--warm`` keeps it). Nothing of slime leaves the
scratch directory.

Usage: flock /tmp/vime-heavy.lock .venv/bin/python benchmarks/bench_follow.py [--scratch DIR] [--to 2298]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_window import build_downstream, plan_edits, sh

from sync.audit.run import audit
from sync.follow.run import FollowOptions, follow
from sync.ledger import load_ledger
from sync.rules import load_rules
from sync.window import run_window
from sync.window.history import find_pr_commit, first_parent_log
from sync.window.resolve import resolve_branch

FROM_PR = 2014


def policy(question: dict, owned: set[str]) -> str:
    """The documented answer to a Decide question: vime's side on files it edited, upstream's elsewhere."""
    options = question["options"]
    if "ours" not in options:  # a line note (conformance, unsupported, ...): keep the translated line
        return "keep"
    return "ours" if question["file"] in owned else "theirs"


def answer(report_dir: Path, owned: set[str]) -> dict[str, int]:
    path = report_dir / "decisions.json"
    doc = json.loads(path.read_text())
    given: dict[str, int] = {}
    for q in doc["questions"]:
        if q["tier"] == "Decide" and not q.get("decision"):
            q["decision"] = policy(q, owned)
            given[q["decision"]] = given.get(q["decision"], 0) + 1
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return given


def accept_gate_failures(worktree: Path, report_dir: Path) -> list[str]:
    """The policy for a gate stop: the files of the new failures are excluded from the static checks
    (``[static] exclude`` in .vime-sync/gate.toml), committed on the follow branch."""
    gate = json.loads((report_dir / "gate.json").read_text())
    files = sorted({f for failure in gate["new"] for f in failure["files"]})
    config = worktree / ".vime-sync/gate.toml"
    old = config.read_text() if config.exists() else ""
    lines = [line for line in old.splitlines() if not line.startswith(("[static]", "exclude = "))]
    kept = json.loads(old.split("exclude = ", 1)[1].splitlines()[0]) if "exclude = " in old else []
    if set(files) <= set(kept):  # excluding cannot answer it: the policy has nothing left to say
        raise SystemExit(f"gate stop in {report_dir.name}: its new failures are in excluded files already")
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        "\n".join([*lines, "[static]", f"exclude = {json.dumps(sorted(set(kept) | set(files)))}"]) + "\n"
    )
    sh(worktree, "add", ".vime-sync/gate.toml")
    sh(worktree, "commit", "-q", "-m", f"gate: accept {', '.join(files)} as they are")
    return files


def mirrored_tree(worktree: Path) -> dict[str, str]:
    out = {}
    for line in sh(worktree, "ls-tree", "-r", "HEAD").splitlines():
        meta, path = line.split("\t", 1)
        if not path.startswith(("reports/", ".vime-sync/")):
            out[path] = meta.split()[2]
    return out


def run_follow(
    up: Path, down: Path, owned: set[str], to_pr: int, gate: bool
) -> tuple[Path, list[dict], float]:
    stops: list[dict] = []
    options = FollowOptions(from_pr=FROM_PR, until=to_pr, gate=gate)
    started = time.perf_counter()
    while True:
        result = follow(up, down, options)
        options = FollowOptions(until=to_pr, gate=gate)
        for o in result.steps:
            print(f"  {o.label:>22} {o.summary.cell() if o.summary else '-'}", flush=True)
        if not result.stop:
            break
        pr = result.steps[-1].pr
        report = result.worktree / f"reports/slime-{pr}-{pr}"
        if "needs a person" in result.stop:
            given = answer(report, owned)
            stops.append({"pr": pr, "answers": given})
            print(f"  stop at #{pr}: answered {given}", flush=True)
        else:
            excluded = accept_gate_failures(result.worktree, report)
            stops.append({"pr": pr, "gate_excluded": excluded})
            print(f"  gate stop at #{pr}: excluded {excluded}", flush=True)
    return result.worktree, stops, time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", default="/work/.mirror/THUDM+slime/repo")
    ap.add_argument("--scratch", default=None)
    ap.add_argument("--to", type=int, default=2298)
    ap.add_argument("--no-gate", action="store_true", help="follow without the per-PR gate")
    ap.add_argument("--warm", action="store_true", help="keep the translation cache of an earlier run")
    ap.add_argument("--json", default=None, help="write the figures here")
    args = ap.parse_args()
    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="vime-bench-follow-"))
    up, down = scratch / "slime", scratch / "vime"
    scratch.mkdir(parents=True, exist_ok=True)
    print(f"scratch: {scratch}; load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    if not up.exists():
        sh(scratch, "clone", "-q", "--no-checkout", args.mirror, str(up))
    rules = load_rules()
    history = first_parent_log(up, "HEAD")
    cutoff = find_pr_commit(history, FROM_PR - 1).sha
    tip = find_pr_commit(history, args.to).sha
    cache = down / ".git" / "vime-sync-cache"
    kept = scratch / "cache-kept"
    if down.exists():
        if args.warm and cache.exists():
            shutil.rmtree(kept, ignore_errors=True)
            shutil.move(str(cache), str(kept))
        for extra in scratch.glob("vime-*"):
            shutil.rmtree(extra)
        shutil.rmtree(down)
    files = build_downstream(up, down, cutoff, rules)
    compat = Path(__file__).resolve().parents[1] / "vime" / "compat"
    shutil.copytree(compat, down / "vime" / "compat", ignore=shutil.ignore_patterns("__pycache__"))
    sh(down, "add", "vime/compat")
    sh(down, "commit", "-q", "-m", "vime's compat layer (translated plugin code imports it)")
    overlap, apart, outside, renamed, adjacent = plan_edits(up, cutoff, tip, rules, files)
    edits = {**overlap, **apart, **outside, **renamed, **adjacent}
    for rel, data in edits.items():
        (down / rel).write_bytes(data)
    sh(down, "commit", "-q", "-a", "-m", "vime edits")
    if args.warm and kept.exists():
        shutil.move(str(kept), str(cache))
    owned = set(edits)
    print(f"{len(files)} files; {len(edits)} downstream edits: {sorted(edits)}")

    wt, stops, follow_s = run_follow(up, down, owned, args.to, not args.no_gate)
    rows = [r for r in load_ledger(wt) if r.follow is not None]
    seconds = [r.follow.seconds for r in rows]
    person = [r for r in rows if r.follow.person]
    gate_failed = [r.label for r in rows if r.follow.gate.startswith("failed")]
    print(
        f"\nfollow: {len(rows)} PRs ({len(rows) - len(person)} with no person, {len(person)} stops), "
        f"median {statistics.median(seconds):.1f} s, worst {max(seconds):.1f} s "
        f"({rows[seconds.index(max(seconds))].label}), total {sum(seconds):.0f} s machine time, "
        f"{follow_s:.0f} s wall; gate failures: {gate_failed or 'none'}"
    )

    started = time.perf_counter()
    window = run_window(up, down, to_pr=args.to, from_pr=FROM_PR, worktree=scratch / "vime-window")
    window_given = answer(window.report_dir, owned)
    resolve_branch(window.worktree)
    window_s = time.perf_counter() - started
    a, b = mirrored_tree(wt), mirrored_tree(window.worktree)
    differ = sorted(p for p in set(a) | set(b) if a.get(p) != b.get(p))
    print(f"window #{FROM_PR}..#{args.to} + the same policy ({window_given}): {window_s:.0f} s; "
          f"{len(a)} files, {len(differ)} differ: {differ}")  # fmt: skip
    diffs = {}
    for p in differ:
        out = subprocess.run(["git", "diff", "--no-index", "--stat", "--", str(window.worktree / p), str(wt / p)],
                             capture_output=True, text=True, check=False)  # fmt: skip
        diffs[p] = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else "missing on one side"

    audits = {}
    for name, tree in (("follow", wt), ("window", window.worktree)):
        r = audit(up, tree, FROM_PR, args.to)
        counts = dict(r.counts())
        audits[name] = {"seconds": round(r.seconds, 1), "counts": counts, "omissions": len(r.omissions),
                        "frozen": len(r.frozen), "stale": len(r.stale), "translated": r.translated}  # fmt: skip
        print(f"audit on the {name} result: {r.seconds:.1f} s, {sum(counts.values())} hunks {counts}, "
              f"{len(r.frozen)} frozen, {len(r.stale)} stale")  # fmt: skip
        for o in r.omissions[:20]:
            print(f"  omission {o.file}:{o.line} #{o.pr} {o.why}: {o.text[:80]!r}")
    figures = {
        "prs": len(rows), "no_person": len(rows) - len(person), "stops": stops,
        "median_s": round(statistics.median(seconds), 2), "worst_s": round(max(seconds), 2),
        "worst_pr": rows[seconds.index(max(seconds))].label, "seconds": {r.label: r.follow.seconds for r in rows},
        "gate_failed": gate_failed, "follow_wall_s": round(follow_s), "window_s": round(window_s),
        "tree_files": len(a), "tree_differ": diffs, "audits": audits, "load_end": os.getloadavg()[0],
    }  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
