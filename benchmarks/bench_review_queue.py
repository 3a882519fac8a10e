"""Measure the review queue on real slime history, chained as a team uses it, in scratch.

1. downstream = translate(slime@#2013) + the 15 downstream edits of bench_window.py;
2. window #2014..#2125: run, answer (Decide -> ours, the rest by default), resolve, merge into main;
3. `window --to 2298 --per-pr` from the state file: questions by tier and kind, PRs on every question
   and site, downstream edits kept, unedited files byte-equal to translate(slime@#2298);
4. resolve it, then the gate: the plain static checks (all failures) and `--regressions` (new vs
   pre-existing, each new one with the PR found by bisecting the per-PR commits);
5. the ledger across both windows ("where is PR #N?");
6. vime's own repository (a scratch clone of this checkout, with translations/layout.toml) against
   real slime #2014..#2125: counts by outcome, the port queue, and whether anything landed.

Nothing of slime is written outside the scratch directory.
Usage: .venv/bin/python benchmarks/bench_review_queue.py [--mirror PATH] [--scratch DIR] [--skip-vime]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_window import answer_and_resolve, build_downstream, merge_into_main, plan_edits, sh

from sync.gate import run_static_checks
from sync.gate.config import load_gate_config
from sync.gate.regression import regression_gate
from sync.gitio import BlobReader, ls_tree
from sync.ledger import fill_downstream, load_ledger, where_is
from sync.model.gate import GateResult
from sync.rules import load_rules
from sync.translate import translate_file
from sync.window import run_window
from sync.window.history import find_pr_commit, first_parent_log

MARK = b"# vime:"


def expected_tree(up: Path, rev: str, rules) -> dict[str, bytes]:
    out = {}
    with BlobReader(up) as blobs:
        for path, (mode, oid) in ls_tree(up, rev).items():
            if mode in ("100644", "100755"):
                t = translate_file(path, blobs.read(oid), rules)
                if t.dst_path:
                    out[t.dst_path] = t.data
    return out


def queue_report(result) -> None:
    qs = result.questions
    print(
        f"questions: {len(qs)} by tier {dict(Counter(q.tier for q in qs))}, by kind {dict(Counter(q.kind for q in qs))}"
    )
    sites = sum(len(q.sites) for q in qs)
    recorded = sum(1 for q in qs for s in q.sites if s.get("recorded_in"))
    print(
        f"  grouped: {sum(1 for q in qs if q.sites)} questions hold {sites} sites ({recorded} with a recorded decision)"
    )
    no_pr = [q.id for q in qs if not q.prs] + [f"{q.id} site" for q in qs for s in q.sites if not s["prs"]]
    print(f"  every question and site names PRs: {not no_pr} {no_pr[:5]}")
    hunks = [q for q in qs if q.kind in ("conflict", "add_add")]
    for q in hunks:
        files = {o.path: o for o in result.outcomes}
        print(
            f"  {q.id} {q.tier} {q.kind} {q.file}:{q.lines} hunk PRs {q.prs} (file PRs: {len(file_prs(result, files[q.file]))})"
        )
    for q in qs:
        if q.sites:
            print(f"  {q.id} {q.kind} {q.rules or ''} {q.summary[:90]} PRs {q.prs[:6]}")


def file_prs(result, out) -> list:
    prs = result.window.prs_by_file()
    return prs.get(out.upstream_path, [])


def gate_counts(tree: Path, rules) -> GateResult:
    result = GateResult()
    run_static_checks(tree, {}, load_gate_config(tree), result, rules)
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", default="/work/.mirror/THUDM+slime/repo")
    ap.add_argument("--scratch", default=None)
    ap.add_argument("--skip-vime", action="store_true")
    ap.add_argument("--only-vime", action="store_true")
    ap.add_argument(
        "--edits-for-window-2", action="store_true", help="also edit lines next to window 2's changes"
    )
    args = ap.parse_args()
    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="vime-bench-queue-"))
    scratch.mkdir(parents=True, exist_ok=True)
    up, down = scratch / "slime", scratch / "vime"
    print(f"scratch: {scratch}")
    sh(scratch, "clone", "-q", "--no-checkout", args.mirror, str(up))
    rules = load_rules()
    history = first_parent_log(up, "HEAD")
    cut, tip1, tip2 = (find_pr_commit(history, n).sha for n in (2013, 2125, 2298))
    if not args.only_vime:
        chained(up, down, cut, tip1, tip2, rules, args.edits_for_window_2)
    if not args.skip_vime:
        vime_itself(up, scratch / "vime-self")


def chained(up: Path, down: Path, cut: str, tip1: str, tip2: str, rules, edits_for_window_2: bool) -> None:
    t0 = time.perf_counter()
    files = build_downstream(up, down, cut, rules)
    overlap, apart, outside, renamed, adjacent = plan_edits(up, cut, tip1, rules, files)
    edits = {**overlap, **apart, **outside, **renamed, **adjacent}
    for rel, data in edits.items():
        (down / rel).write_bytes(data)
    sh(down, "commit", "-q", "-a", "-m", "vime edits")
    print(f"downstream: {len(files)} files, {len(edits)} edits, {time.perf_counter() - t0:.0f} s")

    t = time.perf_counter()
    w1 = run_window(up, down, to_pr=2125, from_pr=2014)
    print(f"\nwindow #2014..#2125: {len(w1.outcomes)} files, {len(w1.questions)} questions "
          f"{dict(Counter(q.tier for q in w1.questions))}, {time.perf_counter() - t:.0f} s")  # fmt: skip
    print("  resolve applied:", answer_and_resolve(w1))
    moved = {o.renamed_from: o.path for o in w1.outcomes if o.renamed_from}
    merge_into_main(down, w1)
    if edits_for_window_2:  # more downstream edits, next to window 2's changes: conflicts to attribute
        with BlobReader(down) as blobs:
            now = {p: blobs.read(oid) for p, (mode, oid) in ls_tree(down, "HEAD").items() if mode != "160000"}
        o2, a2, _, _, j2 = plan_edits(up, tip1, tip2, rules, now)
        more = {p: d for p, d in {**o2, **a2, **j2}.items() if p not in edits and p not in moved.values()}
        for rel, data in more.items():
            (down / rel).write_bytes(data)
        sh(down, "commit", "-q", "-a", "-m", "vime edits after window 1")
        edits |= more
        print(f"  {len(more)} more downstream edits next to window 2's changes: {sorted(more)}")

    t = time.perf_counter()
    w2 = run_window(up, down, to_pr=2298, per_pr=True)
    w = w2.window
    print(f"\nwindow #{w.from_pr}..#{w.to_pr} (from the state file, --per-pr): {len(w.commits)} commits, "
          f"{len(w2.outcomes)} files, {time.perf_counter() - t:.0f} s")  # fmt: skip
    print("outcomes:", dict(sorted(Counter(o.outcome for o in w2.outcomes).items())))
    queue_report(w2)
    moved |= {o.renamed_from: o.path for o in w2.outcomes if o.renamed_from}
    print("  resolve applied:", answer_and_resolve(w2))

    wt = w2.worktree
    expected = expected_tree(up, tip2, rules)
    edited = {moved.get(p, p) for p in edits}
    edited |= {moved.get(p, p) for p in list(edited)}
    lost = [p for p in edited if not (wt / p).exists() or MARK not in (wt / p).read_bytes()]
    print(
        f"check: downstream edits kept after both windows: {len(edited) - len(lost)}/{len(edited)} (lost: {lost})"
    )
    asked = {o.path for o in w2.outcomes if o.outcome in ("modify_delete", "port")}
    mismatches = [p for p, data in expected.items() if p not in edited and p not in asked
                  and (not (wt / p).exists() or (wt / p).read_bytes() != data)]  # fmt: skip
    print(f"check: unedited files equal translate(slime@#2298): {len(expected) - len(edited & set(expected)) - len(mismatches)}"
          f"/{len(expected) - len(edited & set(expected))} (mismatches {mismatches[:5]})")  # fmt: skip

    t = time.perf_counter()
    plain = gate_counts(wt, rules)
    print(f"\ngate, plain static checks on the resolved tree: {len(plain.failures)} failures "
          f"{dict(Counter(f.check for f in plain.failures))} ({time.perf_counter() - t:.0f} s)")  # fmt: skip
    for contracts in (False, True):
        t = time.perf_counter()
        reg = regression_gate(wt, file_prs=w.prs_by_file(), contracts=contracts)
        what = "static checks and contracts" if contracts else "static checks only"
        print(f"gate --regressions ({what}): {len(reg.new)} new, {len(reg.fixed)} fixed, "
              f"{len(reg.preexisting)} pre-existing; {reg.probes} trees checked, {time.perf_counter() - t:.0f} s")  # fmt: skip
        for label, items in (("new", reg.new), ("fixed", reg.fixed), ("pre-existing", reg.preexisting)):
            print(f"  {label} by check: {dict(Counter(f.check for f in items))}")
        for note in reg.notes:
            print(f"  note: {note[:160]}")
    for f in reg.new:
        print(f"  NEW {f.check} {f.files} PRs {f.prs}: {f.message[:110]}")
    for f in reg.fixed[:10]:
        print(f"  FIXED {f.check} {f.files}: {f.message[:110]}")

    rows = fill_downstream(wt, load_ledger(wt))
    print(f"\nledger: {len(rows)} rows, {dict(Counter(r.disposition for r in rows))}, "
          f"windows {sorted({r.window for r in rows})}, with vime commit {sum(bool(r.downstream) for r in rows)}")  # fmt: skip
    for pr in (2050, 2200, 2298, 2085):
        print(" ", where_is(rows, pr)[:200])


def vime_itself(up: Path, clone: Path) -> None:
    """vime's own repository as the downstream of slime, with translations/layout.toml."""
    src = Path(__file__).resolve().parents[1]
    subprocess.run(["git", "clone", "-q", str(src), str(clone)], check=True)
    t = time.perf_counter()
    r = run_window(up, clone, to_pr=2125, from_pr=2014)
    print(f"\nvime itself, window #2014..#2125: {len(r.outcomes)} files in {time.perf_counter() - t:.0f} s")
    counts = Counter(o.outcome for o in r.outcomes)
    print("outcomes:", dict(sorted(counts.items())))
    landed = [o.path for o in r.outcomes if o.data is not None or o.remove]
    print(f"files written or removed in vime by commit 1: {len(landed)} {landed[:8]}")
    qs = r.questions
    print(
        f"questions: {len(qs)} by tier {dict(Counter(q.tier for q in qs))}, by kind {dict(Counter(q.kind for q in qs))}"
    )
    ports = [q for q in qs if q.kind == "port"]
    targets = Counter(
        q.file.split("/")[0] + "/" + q.file.split("/")[1] if "/" in q.file else q.file for q in ports
    )
    print(f"port queue: {len(ports)} requests; by target folder {dict(targets.most_common(12))}")
    existing = sum(1 for q in ports if (clone / q.file).exists())
    print(f"  {existing} name an existing vime module, {len(ports) - existing} a path vime does not have")
    ignored = [o for o in r.outcomes if o.outcome == "not_mirrored"]
    print(f"not mirrored (ignored or not in the rules): {len(ignored)}")
    print(
        f"diffs saved: {len(list((r.report_dir / 'ports').rglob('*.diff')))} under {r.report_dir / 'ports'}"
    )


if __name__ == "__main__":
    main()
