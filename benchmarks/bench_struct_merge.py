"""Replay the merge of every Python file both sides changed, on real slime windows, in scratch.

For each window, base = translate(slime@cutoff) and theirs = translate(slime@tip) of every modified
Python file; ours = base plus one downstream edit (a comment on one line of a top-level statement).
The edits: on each statement upstream changed, its first line and the first line upstream changed
in it (both sides change the statement; the second is a line conflict), on the statements next to
those (one side each: what the per-statement pass exists for), and on a few at random (seeded).
Each case runs through the window's merge (``merge_contents``: git merge-file, then the
per-statement pass) and is judged by an oracle that shares none of the pass's code: top-level
statements from ``ast``, a base statement being changed upstream when its text is not among
theirs' statements.

Reported per window: cases by outcome; settled cases where the edited statement was also changed
upstream (must be 0); settled cases where a statement or definition occurs more often than in ours
or theirs (must be 0); settled cases whose result is not theirs plus exactly the downstream edit.
``--compare-with FILE`` runs another ``structmerge.py`` (e.g. an older revision's, extracted with
``git show REV:sync/merge/structmerge.py``) on the same cases.

Nothing of slime is written outside the scratch directory; nothing is committed.
Usage: .venv/bin/python benchmarks/bench_struct_merge.py [--mirror PATH] [--seeds 5] [--compare-with FILE]
"""

from __future__ import annotations

import argparse
import ast
import difflib
import importlib.util
import random
import tempfile
import time
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from sync.gitio import BlobReader
from sync.merge.filemerge import merge_contents
from sync.merge.textmerge import merge3
from sync.rules import load_rules
from sync.translate import translate_file
from sync.window.changes import changed_files
from sync.window.history import find_pr_commit, first_parent_log
from sync.window.translation import Translated

WINDOWS = [(1850, 1923), (1924, 2013), (2014, 2125), (2126, 2298)]
EDIT = "  # vime: downstream edit"
LABELS = ("ours (vime)", "base", "theirs")


@dataclass
class Case:
    window: str
    path: str
    why: str  # "both" (the statement upstream changed), "next" (one next to it), "random"
    stmt: int
    ours: bytes
    base: bytes
    theirs: bytes
    edited_line: bytes
    original_line: bytes


def spans(source: bytes) -> list[tuple[int, int]]:
    """0-based (first, last) line of each top-level statement, decorators included."""
    tree = ast.parse(source)
    out = []
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        out.append((first - 1, (node.end_lineno or node.lineno) - 1))
    return out


def segments(source: bytes, stmt_spans: list[tuple[int, int]]) -> list[bytes]:
    lines = source.splitlines(keepends=True)
    return [b"".join(lines[first : last + 1]) for first, last in stmt_spans]


def upstream_changed(base: bytes, theirs: bytes, stmt_spans: list[tuple[int, int]]) -> set[int]:
    """Statements (by index) whose text is not among theirs' top-level statements: changed or deleted."""
    kept = set(segments(theirs, spans(theirs)))
    return {k for k, text in enumerate(segments(base, stmt_spans)) if text not in kept}


def changed_lines(base: bytes, theirs: bytes) -> set[int]:
    """0-based base lines a line diff says upstream replaced or deleted."""
    ops = difflib.SequenceMatcher(None, base.splitlines(), theirs.splitlines(), autojunk=False).get_opcodes()
    return {i for tag, i1, i2, _, _ in ops if tag in ("replace", "delete") for i in range(i1, i2)}


def edit_statement(
    base: bytes, span: tuple[int, int], at: int | None = None
) -> tuple[bytes, bytes, bytes] | None:
    """Base with a comment added to line ``at`` of the statement, else its first line (its last, after
    a backslash)."""
    lines = base.splitlines(keepends=True)
    for i in (at, span[0], span[1]) if at is not None else (span[0], span[1]):
        body = lines[i].rstrip(b"\r\n")
        if body.endswith(b"\\") or not body.strip():
            continue
        edited = body + EDIT.encode() + lines[i][len(body) :]
        out = b"".join([*lines[:i], edited, *lines[i + 1 :]])
        try:
            ast.parse(out)
        except SyntaxError:
            continue
        return out, edited, lines[i]
    return None


def cases_for_window(up: Path, rules, history, window: tuple[int, int], seeds: int) -> list[Case]:
    cut = find_pr_commit(history, window[0] - 1)
    tip = find_pr_commit(history, window[1])
    assert cut is not None and tip is not None, window
    name = f"#{window[0]}..#{window[1]}"
    cases: list[Case] = []
    with BlobReader(up) as blobs:
        for c in changed_files(up, cut.sha, tip.sha):
            if c.status != "M" or not c.path.endswith(".py") or not rules.map_path(c.path):
                continue
            base = translate_file(c.path, blobs.read(c.base_oid), rules).data
            theirs = translate_file(c.path, blobs.read(c.theirs_oid), rules).data
            if base == theirs:
                continue
            try:
                stmt_spans = spans(base)
                ast.parse(theirs)
            except SyntaxError:
                continue
            touched = upstream_changed(base, theirs, stmt_spans)
            lines_changed = changed_lines(base, theirs)
            chosen: dict[tuple[int, int | None], str] = {}
            for k in sorted(touched)[:3]:  # its first line, and a line upstream changed (a line conflict)
                chosen[(k, None)] = "both"
                first, last = stmt_spans[k]
                at = next((i for i in range(first, last + 1) if i in lines_changed), None)
                if at is not None and at != first:
                    chosen[(k, at)] = "both"
            for k in sorted(touched):
                for n in (k - 1, k + 1):
                    if 0 <= n < len(stmt_spans) and n not in touched and (n, None) not in chosen:
                        chosen[(n, None)] = "next"
            rng = random.Random(zlib.crc32(c.path.encode()))
            for _ in range(seeds):
                k = rng.randrange(len(stmt_spans)) if stmt_spans else None
                if k is not None and (k, None) not in chosen:
                    chosen[(k, None)] = "both" if k in touched else "random"
            for (k, at), why in sorted(chosen.items(), key=lambda item: (item[0][0], item[0][1] or -1)):
                made = edit_statement(base, stmt_spans[k], at)
                if made is not None and made[0] not in {case.ours for case in cases[-8:]}:
                    cases.append(Case(name, c.path, why, k, made[0], base, theirs, made[1], made[2]))
    return cases


def counts_of(data: bytes) -> Counter[str]:
    """Top-level definitions by name, other statements by their first line: what must not double."""
    tree = ast.parse(data)
    lines = data.decode("utf-8", "replace").splitlines()
    out: Counter[str] = Counter()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out[f"def {node.name}"] += 1
        else:
            out[lines[node.lineno - 1].strip()] += 1
    return out


def judge(case: Case, settled: bytes | None) -> list[str]:
    """What is wrong with a settled result (nothing for a conflict: the line merge's markers stand)."""
    if settled is None:
        return []
    problems = []
    got, o, t = counts_of(settled), counts_of(case.ours), counts_of(case.theirs)
    twice = sorted(k for k, n in got.items() if n > max(o[k], t[k]))
    if twice:
        problems.append(f"twice: {twice[:3]}")
    if case.why == "both":
        problems.append("both-sides change settled")
    theirs_lines = case.theirs.splitlines(keepends=True)
    if theirs_lines.count(case.original_line) == 1:
        theirs_lines[theirs_lines.index(case.original_line)] = case.edited_line
        if settled != b"".join(theirs_lines):
            problems.append("not theirs plus the edit")
    return problems


def load_other(path: str):
    spec = importlib.util.spec_from_file_location("other_structmerge", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.struct_merge


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", default="/work/.mirror/THUDM+slime/repo")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--compare-with", default=None, help="another structmerge.py to run on the same cases")
    args = ap.parse_args()
    rules = load_rules()
    up = Path(args.mirror)
    history = first_parent_log(up, "HEAD")
    other = load_other(args.compare_with) if args.compare_with else None
    print(f"scratch: {tempfile.gettempdir()} (nothing written); mirror {up}")
    for window in WINDOWS:
        t0 = time.perf_counter()
        cases = cases_for_window(up, rules, history, window, args.seeds)
        outcomes: Counter[tuple[str, str]] = Counter()
        bad: list[str] = []
        other_outcomes: Counter[tuple[str, str]] = Counter()
        other_bad: list[str] = []
        for case in cases:
            out = merge_contents(case.path, case.path, case.ours, Translated(case.path, case.path, case.base, "python"),
                                 Translated(case.path, case.path, case.theirs, "python"), LABELS)  # fmt: skip
            outcomes[(case.why, out.outcome)] += 1
            problems = judge(case, out.data if out.outcome == "structural" else None)
            bad += [f"{case.path} stmt {case.stmt} ({case.why}): {p}" for p in problems]
            if other is not None:
                line = merge3(case.ours, case.base, case.theirs, LABELS)
                kind = "clean" if line.conflicts == 0 else None
                if kind is None:
                    result = other(case.ours, case.base, case.theirs)
                    data = result if isinstance(result, bytes | type(None)) else result.data
                    kind = "structural" if data is not None else "conflict"
                    problems = judge(case, data)
                    other_bad += [f"{case.path} stmt {case.stmt} ({case.why}): {p}" for p in problems]
                other_outcomes[(case.why, kind)] += 1
        files = len({c.path for c in cases})
        print(f"\nwindow #{window[0]}..#{window[1]}: {files} modified Python files, {len(cases)} cases "
              f"({time.perf_counter() - t0:.0f} s)")  # fmt: skip
        for why in ("both", "next", "random"):
            row = {k[1]: n for k, n in sorted(outcomes.items()) if k[0] == why}
            print(f"  edit on a statement {why:>6}: {row}")
        print(f"  problems in settled results: {len(bad)}")
        for line in bad[:20]:
            print(f"    {line}")
        if other is not None:
            for why in ("both", "next", "random"):
                row = {k[1]: n for k, n in sorted(other_outcomes.items()) if k[0] == why}
                print(f"  compared structmerge, {why:>6}: {row}")
            print(f"  compared structmerge, problems in settled results: {len(other_bad)}")
            for line in other_bad[:20]:
                print(f"    {line}")


if __name__ == "__main__":
    main()
