"""Benchmark `vime-sync window` on real slime history, window #2014..#2125, in a scratch directory.

downstream = translate(slime at PR #2013) (the real translator), committed as a repository, plus
downstream edits: some overlapping the window's upstream changes, some not, some in files the
window does not touch. Runs the window cold (empty translation cache) and warm, 3 times each, and
a reference in the same run: regex translation + `git merge-file` per changed file. Then checks
that every file without a downstream edit equals translate(slime at #2125) exactly, that the
non-overlapping edits survive, and that conflicts appear only where edits overlap. Each run's
stage split (seconds per stage, ``WindowResult.timings``) is printed.

``--chain``: then, as a team goes on, window 1 is answered (Decide -> ours, or keep), resolved and
merged, and window #2126..#2298 runs from the state file, 3 times with the cache window 1 left
(chained) and once more with an empty cache.

Nothing of slime is written outside the scratch directory.
Usage: .venv/bin/python benchmarks/bench_window.py [--mirror PATH] [--scratch DIR] [--repeats 3] [--chain]
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

from sync.gitio import BlobReader, ls_tree
from sync.merge.textmerge import merge3
from sync.rules import load_rules
from sync.translate import translate_file
from sync.window import run_window
from sync.window.changes import changed_files
from sync.window.history import find_pr_commit, first_parent_log
from sync.window.parallel import default_workers
from sync.window.resolve import resolve_branch

FROM_PR, TO_PR = 2014, 2125
NOTE = "# vime: downstream note (benchmark edit)"


def sh(repo: Path, *args: str, input: bytes | None = None) -> str:
    env_args = ["-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    out = subprocess.run(
        ["git", *env_args, "-C", str(repo), *args], capture_output=True, check=True, input=input
    )
    return out.stdout.decode("utf-8", "replace").strip()


def build_downstream(up: Path, down: Path, cutoff: str, rules) -> dict[str, bytes]:
    """translate(slime@cutoff) committed as the downstream; returns dst path -> content."""
    files: dict[str, bytes] = {}
    with BlobReader(up) as blobs:
        for path, (mode, oid) in sorted(ls_tree(up, cutoff).items()):
            if mode not in ("100644", "100755"):
                continue
            t = translate_file(path, blobs.read(oid), rules)
            if t.dst_path:
                files[t.dst_path] = t.data
    down.mkdir(parents=True)
    sh(down, "init", "-q", "-b", "main")
    for rel, data in files.items():
        (down / rel).parent.mkdir(parents=True, exist_ok=True)
        (down / rel).write_bytes(data)
    sh(down, "add", "-A", "-f")
    sh(down, "commit", "-q", "-m", "vime at slime #2013 (translated)")
    return files


def changed_base_lines(base: bytes, theirs: bytes) -> list[tuple[int, int]]:
    ops = difflib.SequenceMatcher(None, base.splitlines(), theirs.splitlines(), autojunk=False).get_opcodes()
    return [(i1, i2) for tag, i1, i2, _, _ in ops if tag != "equal"]


def top_level_spans(source: bytes) -> list[tuple[int, int]]:
    """0-based (first, last) line of every top-level statement, decorators included."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    spans = []
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        spans.append((first - 1, (node.end_lineno or node.lineno) - 1))
    return spans


def adjacent_edit(base: bytes, ranges: list[tuple[int, int]]) -> bytes | None:
    """Edit the top-level statement right before an upstream-changed top-level statement (line-adjacent:
    a line merge conflicts, a per-definition merge does not), or None when the file has no such pair."""
    spans = top_level_spans(base)
    starts = {first: (first, last) for first, last in spans}
    ends = {last: (first, last) for first, last in spans}
    changed = {i for a, b in ranges for i in range(a, max(b, a + 1))}
    lines = base.splitlines(keepends=True)
    for a, _end in ranges:
        if a not in starts or a - 1 not in ends:
            continue
        prev = ends[a - 1]
        if prev[0] != prev[1] or any(i in changed for i in range(prev[0], prev[1] + 1)):
            continue
        lines[prev[1]] = lines[prev[1]].rstrip(b"\r\n") + b"  # vime: adjacent edit\n"
        return b"".join(lines)
    return None


def plan_edits(up: Path, cutoff: str, tip: str, rules, files: dict[str, bytes]):
    """Pick files and lines for the downstream edits: 4 overlapping, 4 not overlapping, 3 outside the window."""
    overlap, apart, adjacent = {}, {}, {}
    changes = [c for c in changed_files(up, cutoff, tip) if c.status == "M" and c.path.endswith(".py")]
    with BlobReader(up) as blobs:
        for c in changes:
            dst = rules.map_path(c.path)
            if dst not in files:
                continue
            base = translate_file(c.path, blobs.read(c.base_oid), rules).data
            theirs = translate_file(c.path, blobs.read(c.theirs_oid), rules).data
            ranges = changed_base_lines(base, theirs)
            lines = base.splitlines(keepends=True)
            if not ranges or len(lines) < 40:
                continue
            edited = adjacent_edit(base, ranges) if len(adjacent) < 3 else None
            if edited is not None:
                adjacent[dst] = edited
            elif len(overlap) < 4 and ranges[0][0] < len(lines) and lines[ranges[0][0]].strip():
                i = ranges[0][0]
                lines[i] = lines[i].rstrip(b"\r\n") + b"  # vime: overlapping edit\n"
                overlap[dst] = b"".join(lines)
            elif len(apart) < 4:
                far = [
                    j for j in range(len(lines))
                    if lines[j].strip() and all(j < a - 6 or j > max(b, a + 1) + 6 for a, b in ranges)
                    and not lines[j].lstrip().startswith((b'"', b"'"))
                ]  # fmt: skip
                if far:
                    j = far[len(far) // 2]
                    indent = lines[j][: len(lines[j]) - len(lines[j].lstrip())]
                    lines.insert(j, indent + NOTE.encode() + b"\n")
                    apart[dst] = b"".join(lines)
    window_paths = {
        rules.map_path(p) for c in changed_files(up, cutoff, tip) for p in (c.old_path, c.new_path) if p
    }
    outside = {}
    for dst in sorted(files):
        if (
            dst.endswith(".py")
            and dst not in window_paths
            and len(outside) < 3
            and files[dst].count(b"\n") > 20
        ):
            outside[dst] = files[dst] + (NOTE + "\n").encode()
    renamed = {}
    for c in changed_files(up, cutoff, tip):
        old = rules.map_path(c.old_path) if c.status == "R" else None
        if old in files and old.endswith(".py"):
            renamed[old] = (NOTE + "\n").encode() + files[old]  # a note on top: upstream edits lie elsewhere
            break
    return overlap, apart, outside, renamed, adjacent


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (worker processes, git): load-independent cost."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def drop_branch(down: Path, result) -> None:
    sh(down, "worktree", "remove", "--force", str(result.worktree))
    sh(down, "branch", "-D", result.branch)


def answer_and_resolve(result) -> dict[str, int]:
    """Decide questions -> ours (keeps the downstream's lines), or keep where that is the option
    (conformance findings); the rest take their defaults."""
    path = result.report_dir / "decisions.json"
    doc = json.loads(path.read_text())
    for q in doc["questions"]:
        if q["tier"] == "Decide":
            q["decision"] = "ours" if "ours" in q["options"] else "keep"
    path.write_text(json.dumps(doc, indent=2))
    return resolve_branch(result.worktree).applied


def merge_into_main(down: Path, result) -> None:
    sh(down, "worktree", "remove", "--force", str(result.worktree))
    sh(down, "merge", "-q", "--no-ff", "-m", f"merge {result.branch}", result.branch)


def split(result) -> str:
    """The stage split of one run: seconds per stage."""
    return " · ".join(f"{name} {seconds:.2f}" for name, seconds in result.timings.items())


def chained(up: Path, down: Path, result, repeats: int) -> None:
    """Window #2126..#2298 after window 1 is answered, resolved and merged: with window 1's cache, then cold."""
    print(f"\nwindow 1 answered and resolved: {answer_and_resolve(result)}")
    merge_into_main(down, result)
    cache = down / ".git" / "vime-sync-cache"
    kept = down.parent / "cache-after-window-1"
    shutil.rmtree(kept, ignore_errors=True)
    shutil.copytree(cache, kept)
    times, cpu, last = [], [], None
    load_before = os.getloadavg()[0]
    for i in range(repeats + 1):
        if last is not None:
            drop_branch(down, last)
        shutil.rmtree(cache, ignore_errors=True)
        if i < repeats:
            shutil.copytree(kept, cache)
        t, c = time.perf_counter(), cpu_seconds()
        last = run_window(up, down, to_pr=2298)
        label = "chained (window 1's cache)" if i < repeats else "cold (empty cache)"
        print(f"window #{last.window.from_pr}..#{last.window.to_pr} {label}: {time.perf_counter() - t:.2f} s "
              f"({cpu_seconds() - c:.1f} CPU s; {last.cache_misses} translated) | {split(last)}")  # fmt: skip
        if i < repeats:
            times.append(time.perf_counter() - t)
            cpu.append(cpu_seconds() - c)
    assert last is not None
    print(f"outcomes: {dict(sorted(Counter(o.outcome for o in last.outcomes).items()))}; "
          f"questions: {len(last.questions)} {dict(Counter(q.tier for q in last.questions))}")  # fmt: skip
    print(f"chained window 2, median of {repeats}: {statistics.median(times):.2f} s "
          f"({statistics.median(cpu):.1f} CPU s); load average (1 min) before/after: "
          f"{load_before:.1f} / {os.getloadavg()[0]:.1f}")  # fmt: skip


def reference_run(up: Path, down: Path, cutoff: str, tip: str, rules) -> float:
    """Regex translation (word-bounded sglang->vllm) + git merge-file per changed file: the floor."""
    word = re.compile(rb"\bsglang\b|SGLang")
    start = time.perf_counter()
    tree = ls_tree(down, "HEAD")
    with BlobReader(up) as ub, BlobReader(down) as db:
        for c in changed_files(up, cutoff, tip):
            dst = rules.map_path(c.path)
            if dst is None:
                continue
            base = word.sub(b"vllm", ub.read(c.base_oid)) if c.base_oid else b""
            theirs = word.sub(b"vllm", ub.read(c.theirs_oid)) if c.theirs_oid else b""
            ours = db.read(tree[dst][1]) if dst in tree else b""
            merge3(ours, base, theirs, ("ours", "base", "theirs"))
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", default="/work/.mirror/THUDM+slime/repo")
    ap.add_argument("--scratch", default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--chain", action="store_true", help="then window #2126..#2298 after window 1 is merged")
    args = ap.parse_args()
    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="vime-bench-window-"))
    up, down = scratch / "slime", scratch / "vime"
    print(f"scratch: {scratch}")
    scratch.mkdir(parents=True, exist_ok=True)
    sh(scratch, "clone", "-q", "--no-checkout", args.mirror, str(up))
    rules = load_rules()
    history = first_parent_log(up, "HEAD")
    cutoff = find_pr_commit(history, FROM_PR - 1).sha
    tip = find_pr_commit(history, TO_PR).sha
    t0 = time.perf_counter()
    files = build_downstream(up, down, cutoff, rules)
    print(f"downstream: {len(files)} translated files in {time.perf_counter() - t0:.1f} s")
    overlap, apart, outside, renamed, adjacent = plan_edits(up, cutoff, tip, rules, files)
    for rel, data in {**overlap, **apart, **outside, **renamed, **adjacent}.items():
        (down / rel).write_bytes(data)
    sh(down, "commit", "-q", "-a", "-m", "vime edits")
    print(
        f"edits: overlapping {sorted(overlap)}\n       apart {sorted(apart)}\n       outside {sorted(outside)}\n       renamed upstream {sorted(renamed)}"
    )

    cache = down / ".git" / "vime-sync-cache"
    cold, warm, ref, cold_cpu, warm_cpu = [], [], [], [], []
    load_before = os.getloadavg()[0]
    result = None
    for _ in range(args.repeats):
        ref.append(reference_run(up, down, cutoff, tip, rules))
        shutil.rmtree(cache, ignore_errors=True)
        if result:
            drop_branch(down, result)
        t, c = time.perf_counter(), cpu_seconds()
        result = run_window(up, down, to_pr=TO_PR, from_pr=FROM_PR)
        cold.append(time.perf_counter() - t)
        cold_cpu.append(cpu_seconds() - c)
        print(f"cold run: {cold[-1]:.2f} s | {split(result)}")
    trees = set()
    for _ in range(args.repeats):
        drop_branch(down, result)
        t, c = time.perf_counter(), cpu_seconds()
        result = run_window(up, down, to_pr=TO_PR, from_pr=FROM_PR)
        warm.append(time.perf_counter() - t)
        warm_cpu.append(cpu_seconds() - c)
        print(f"warm run: {warm[-1]:.2f} s | {split(result)}")
        trees.add(sh(result.worktree, "rev-parse", "HEAD^{tree}"))
    assert result is not None

    w = result.window
    print(f"\nwindow: {len(w.commits)} commits, {len(w.prs)} PRs; below range: {[c.pr for c in w.below_range]}; "
          f"late: {[c.pr for c in w.late]}; direct pushes: {len(w.direct_pushes)}")  # fmt: skip
    changes = Counter(c.status for c in changed_files(up, cutoff, tip))
    print(f"changed files upstream: {sum(changes.values())} {dict(sorted(changes.items()))}")
    print("outcomes:", dict(sorted(Counter(o.outcome for o in result.outcomes).items())))
    print("headline:", result.counts)
    tiers = Counter(q.tier for q in result.questions)
    kinds = Counter(q.kind for q in result.questions)
    print(f"questions: {len(result.questions)} {dict(tiers)} by kind {dict(kinds)}")

    # checks
    moved = {o.renamed_from: o.path for o in result.outcomes if o.renamed_from}
    edited = set(overlap) | set(apart) | set(outside) | set(adjacent) | {moved.get(p, p) for p in renamed}
    expected: dict[str, bytes] = {}
    with BlobReader(up) as blobs:
        for path, (mode, oid) in ls_tree(up, tip).items():
            if mode in ("100644", "100755"):
                t = translate_file(path, blobs.read(oid), rules)
                if t.dst_path:
                    expected[t.dst_path] = t.data
    wt = result.worktree
    kept_questions = {o.path for o in result.outcomes if o.outcome in ("modify_delete",)}
    mismatches = [p for p, data in expected.items() if p not in edited and p not in kept_questions
                  and (not (wt / p).exists() or (wt / p).read_bytes() != data)]  # fmt: skip
    tracked = set(sh(wt, "ls-files").splitlines())
    extra = sorted(
        p
        for p in tracked
        if p not in expected and p not in edited and not p.startswith((".vime-sync/", "reports/"))
    )
    print(f"check: files without downstream edits equal translate(slime@#2125): "
          f"{len(expected) - len(mismatches) - len(edited & set(expected))}/{len(expected) - len(edited & set(expected))} "
          f"(mismatches {mismatches[:5]}, extra files {extra[:5]})")  # fmt: skip
    survived = [p for p in apart if NOTE in (wt / p).read_text() and b"<<<<<<<" not in (wt / p).read_bytes()]
    survived_out = [p for p in outside if (wt / p).read_bytes() == outside[p]]
    print(f"check: non-overlapping edits survive: {len(survived)}/{len(apart)} in window files, "
          f"{len(survived_out)}/{len(outside)} outside the window")  # fmt: skip
    carried = [
        p
        for p in renamed
        if p in moved and (wt / moved[p]).read_text().startswith(NOTE) and not (wt / p).exists()
    ]
    print(f"check: edits to files renamed upstream moved along: {len(carried)}/{len(renamed)} ({moved})")
    conflicted = {o.path for o in result.outcomes if o.outcome in ("conflict", "add_add")}
    print(f"check: conflict files {sorted(conflicted)}; all overlap an edit: {conflicted <= set(overlap)}; "
          f"overlapping edits that merged without conflict: {sorted(set(overlap) - conflicted)}")  # fmt: skip
    by_path = {o.path: o for o in result.outcomes}
    settled = {p: by_path[p].outcome for p in adjacent}
    kept = []
    for p in adjacent:  # expected: upstream's file with exactly the downstream's one-line edit applied
        edited = next(x for x in adjacent[p].splitlines(keepends=True) if b"# vime: adjacent edit" in x)
        original = edited.replace(b"  # vime: adjacent edit", b"")
        theirs_lines = expected[p].splitlines(keepends=True)
        if theirs_lines.count(original) == 1:
            theirs_lines[theirs_lines.index(original)] = edited
            kept += [p] if (wt / p).read_bytes() == b"".join(theirs_lines) else []
    print(
        f"check: line-adjacent edits in other top-level statements: outcomes {settled}; result == upstream file plus exactly that edit in {len(kept)}/{len(adjacent)}"
    )
    print(f"check: warm runs give one tree: {len(trees) == 1}")

    med = statistics.median
    print(
        f"\nwall time (median of {args.repeats}): cold {med(cold):.2f} s  warm {med(warm):.2f} s  "
        f"reference (regex + git merge-file) {med(ref):.2f} s"
    )
    print(
        f"  cold runs {[round(x, 2) for x in cold]}, warm runs {[round(x, 2) for x in warm]}, reference {[round(x, 2) for x in ref]}"
    )
    print(f"  CPU seconds (self + children), median: cold {med(cold_cpu):.1f}, warm {med(warm_cpu):.1f}")
    print(f"  load average (1 min) before/after the timed runs: {load_before:.1f} / {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores; workers: {default_workers()}")  # fmt: skip
    print(f"  ratios: cold/reference {med(cold) / med(ref):.1f}x, warm/reference {med(warm) / med(ref):.1f}x")
    print(f"  last warm run: {result.cache_hits} cache hits, {result.cache_misses} misses")
    if args.chain:
        chained(up, down, result, args.repeats)


if __name__ == "__main__":
    main()
