"""What ``vime-sync audit`` prints and writes: counts by category, then each omission, frozen path and
stale deletion on a line of its own (``file:line PR: what``), and the same as JSON."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from sync.audit.accounts import CATEGORIES, Account
from sync.audit.run import AuditResult


def _pr(pr: int | str) -> str:
    return f"#{pr}" if isinstance(pr, int) else str(pr)


def omission_line(a: Account) -> str:
    where = f"{a.file}:{a.line}" if a.line else f"{a.file or a.upstream}"
    quoted = f": {a.text[:80]!r}" if a.text else ""
    return f"{where} {_pr(a.pr)} ({a.upstream}): {a.why}{quoted}"


def summary_lines(r: AuditResult) -> list[str]:
    counts = r.counts()
    lines = [
        f"audit of #{r.from_pr}..#{r.to_pr} ({r.prs} first-parent commits, cutoff {r.cutoff[:10]}; downstream in "
        f"step with {r.end[:10]}): {sum(counts.values())} hunks in {r.files} files, {r.seconds:.1f} s "
        f"({r.translated} versions translated)",
        "  " + ", ".join(f"{counts[c]} {c}" for c in CATEGORIES if counts[c]),
    ]
    lines += [f"  note: {n}" for n in r.notes]
    return lines


def detail_lines(r: AuditResult) -> list[str]:
    out = [f"omission {omission_line(a)}" for a in r.omissions]
    out += [
        f"frozen {f.file} ({f.upstream}): equals upstream's translation at {f.at}, upstream moved on"
        + ("" if f.explained else " (its hunks are omissions)")
        for f in r.frozen
    ]
    out += [
        f"stale {s.file} ({s.upstream}): deleted upstream by {s.deleted_by}, still in the downstream"
        + (" (kept by a recorded answer)" if s.explained else "")
        for s in r.stale
    ]
    return out


def to_dict(r: AuditResult) -> dict[str, Any]:
    return {
        "range": {"from": r.from_pr, "to": r.to_pr, "cutoff": r.cutoff, "end": r.end, "commits": r.prs},
        "passed": r.passed,
        "counts": {c: r.counts()[c] for c in CATEGORIES},
        "accounts": [asdict(a) for a in r.accounts],
        "frozen": [asdict(f) for f in r.frozen],
        "stale": [asdict(s) for s in r.stale],
        "notes": list(r.notes),
        "files": r.files,
        "seconds": round(r.seconds, 2),
    }
