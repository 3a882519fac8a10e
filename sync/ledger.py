"""The ledger: every upstream first-parent commit that a sync window took, and what became of it.

Kept in the downstream as ``.vime-sync/ledger`` across windows, one tab-separated row per upstream
commit in merge order (diff-friendly: a window appends its rows, a hand edit changes one line)::

    sha  pr  window  disposition  downstream  title  reason

Dispositions: ``mirrored`` (its changes landed), ``review`` (a conflict or file question of the
window comes from its changes), ``port`` (a port request: the path is vime-owned or was never in
vime), ``no_effect`` (nothing changes after translation), ``not_mirrored`` (the rules do not mirror
its paths), ``empty`` (no files), and by hand ``ported`` / ``excluded``. ``downstream`` is the vime commit that took it (the
per-PR commit, or empty: then the commit that added the row, found by ``vime-sync ledger``).
Rows that ``vime-sync follow`` wrote carry an eighth cell, ``follow``: the PR's questions by tier,
whether a person answered, the seconds it took and the gate's verdict (``StepSummary``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from sync.gitio import GitError, git
from sync.merge.filemerge import FileOutcome
from sync.model.disposition import BY_HAND, Disposition
from sync.model.names import SYNC_SUBJECT_PREFIX, parse_per_pr_subject
from sync.model.outcome import FILE_QUESTIONS, MIRRORED, Outcome
from sync.model.question import Question
from sync.model.window import UpstreamCommit, Window
from sync.textio import to_utf8

LEDGER_PATH = ".vime-sync/ledger"
LEDGER_MD = ".vime-sync/LEDGER.md"
HEADER = "# vime-sync ledger v1: sha\tpr\twindow\tdisposition\tdownstream\ttitle\treason"
FIELDS = ("sha", "pr", "window", "disposition", "downstream", "title", "reason")
FOLLOW_FIELD = "follow"  # the optional eighth cell


_SUMMARY = re.compile(
    r"^(\d+) Decide, (\d+) Confirm, (\d+) Settled; (no person|a person); ([\d.]+) s; gate (.+)$"
)


class LedgerError(ValueError):
    """The ledger file cannot be read, or a request names nothing in it; one line with the fix."""


@dataclass(frozen=True)
class StepSummary:
    """What ``vime-sync follow`` records per PR: its questions by tier, whether a person answered any,
    the seconds the machine spent on it, and the gate's verdict (passed, failed: N new, not run, waiting)."""

    decide: int
    confirm: int
    settled: int
    person: bool
    seconds: float
    gate: str

    def cell(self) -> str:
        who = "a person" if self.person else "no person"
        return (
            f"{self.decide} Decide, {self.confirm} Confirm, {self.settled} Settled; {who}; "
            f"{self.seconds:.1f} s; gate {self.gate}"
        )

    @classmethod
    def parse(cls, cell: str, where: str) -> StepSummary | None:
        if cell in ("", "-"):
            return None
        m = _SUMMARY.match(cell)
        if m is None:
            raise LedgerError(f"{where}: follow cell {cell!r:.60} is not a follow summary; fix that line")
        d, c, s, who, seconds, gate = m.groups()
        return cls(int(d), int(c), int(s), who == "a person", float(seconds), gate)


@dataclass(frozen=True)
class LedgerRow:
    sha: str
    pr: int | None
    window: str
    disposition: Disposition
    downstream: str
    title: str
    reason: str
    follow: StepSummary | None = None

    def line(self) -> str:
        cells = [self.sha, str(self.pr) if self.pr is not None else "-", self.window, self.disposition,
                 self.downstream or "-", self.title, self.reason]  # fmt: skip
        if self.follow is not None:
            cells.append(self.follow.cell())
        return "\t".join(" ".join(c.split()) for c in cells)

    @property
    def label(self) -> str:
        return f"#{self.pr}" if self.pr is not None else self.sha[:8]


def parse_ledger(text: str, source: str = LEDGER_PATH) -> list[LedgerRow]:
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if len(cells) not in (len(FIELDS), len(FIELDS) + 1):
            raise LedgerError(
                f"{source} line {n}: {len(cells)} fields, expected {len(FIELDS)} (or {len(FIELDS) + 1} with "
                f"the {FOLLOW_FIELD} cell); fix that line"
            )
        sha, pr, window, disposition, downstream, title, reason = cells[: len(FIELDS)]
        follow = (
            StepSummary.parse(cells[len(FIELDS)], f"{source} line {n}") if len(cells) > len(FIELDS) else None
        )
        try:
            known = Disposition(disposition)
        except ValueError:
            raise LedgerError(
                f"{source} line {n}: unknown disposition {disposition!r}; use one of {tuple(map(str, Disposition))}"
            ) from None
        number = None if pr == "-" else int(pr) if pr.isdigit() else None
        rows.append(
            LedgerRow(
                sha,
                number,
                window,
                known,
                "" if downstream == "-" else downstream,
                title,
                reason,
                follow,
            )
        )
    return rows


def dump_ledger(rows: list[LedgerRow]) -> bytes:
    header = HEADER + (f"\t{FOLLOW_FIELD}" if any(r.follow for r in rows) else "")
    return to_utf8("\n".join([header, *(r.line() for r in rows)]) + "\n")


def with_summary(rows: list[LedgerRow], window: str, summary: StepSummary) -> list[LedgerRow]:
    """The rows with ``summary`` on the PR row of ``window`` (a follow step; its direct pushes get none)."""
    return [replace(r, follow=summary) if r.window == window and r.pr is not None else r for r in rows]


def load_ledger(downstream: Path, rev: str = "HEAD") -> list[LedgerRow]:
    """The ledger committed at ``rev`` (empty before the first window)."""
    try:
        text = git(downstream, "show", f"{rev}:{LEDGER_PATH}").decode("utf-8", "replace")
    except GitError:
        return []
    return parse_ledger(text)


def _disposition(
    files: tuple[str, ...], by_upstream: dict[str, FileOutcome], asked: list[str] | None
) -> tuple[Disposition, str]:
    """A commit's disposition from what happened to the files it touched, and a short reason.

    ``asked``: the questions whose hunks or sites this commit's changes produced (per-hunk
    provenance); None when not known, then any question in one of its files counts.
    """
    if not files:
        return Disposition.EMPTY, "no files changed"
    seen = [(f, by_upstream.get(f)) for f in files]
    kinds = Counter(o.outcome if o else "no_net_change" for _, o in seen)
    parts = [f"{n} {k}" for k, n in sorted(kinds.items())]
    if asked:
        shown = ", ".join(asked[:4]) + (" ..." if len(asked) > 4 else "")
        return Disposition.REVIEW, f"{', '.join(parts)}; questions {shown}"
    if asked is None and any(k in FILE_QUESTIONS for k in kinds):
        files_asked = sorted({o.path for _, o in seen if o and o.outcome in FILE_QUESTIONS})
        return (
            Disposition.REVIEW,
            f"{', '.join(parts)}; questions in {', '.join(files_asked[:3])}{' ...' if len(files_asked) > 3 else ''}",
        )
    if Outcome.PORT in kinds:
        ports = sorted({o.path for _, o in seen if o and o.outcome == Outcome.PORT})
        return (
            Disposition.PORT,
            f"{', '.join(parts)}; port by hand: {', '.join(ports[:3])}{' ...' if len(ports) > 3 else ''}",
        )
    if any(k in MIRRORED | FILE_QUESTIONS for k in kinds):  # a question in one of its files is another PR's
        others = sorted({o.path for _, o in seen if o and o.outcome in FILE_QUESTIONS})
        reason = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()) if k not in FILE_QUESTIONS)
        if others:
            more = " ..." if len(others) > 3 else ""
            where = f"merged into {', '.join(others[:3])}{more}, whose questions come from other PRs' changes"
            reason = f"{reason}; {where}" if reason else where
        return Disposition.MIRRORED, reason
    if set(kinds) <= {Outcome.NOT_MIRRORED}:
        notes = sorted({o.note for _, o in seen if o and o.note})
        return Disposition.NOT_MIRRORED, "; ".join(notes) or "the rules do not mirror its paths"
    return Disposition.NO_EFFECT, ", ".join(
        parts
    ) + " (no change after translation, or undone later in the window)"


def window_rows(
    window: Window,
    name: str,
    outcomes: list[FileOutcome],
    downstream_commits: dict[str, str] | None = None,
    questions: list[Question] | None = None,
) -> list[LedgerRow]:
    """One row per first-parent commit of the window, in merge order.

    With ``questions`` (sync.model.question.Question), a commit is ``review`` only when a
    conflict or file question names its PR (grouped rule hits keep their default and do not count).
    """
    by_upstream: dict[str, FileOutcome] = {}
    for o in outcomes:
        by_upstream[o.upstream_path] = o
        if o.upstream_old:
            by_upstream.setdefault(o.upstream_old, o)
    commits = downstream_commits or {}
    asked: dict[int | str, list[str]] | None = None
    if questions is not None:
        asked = {}
        for q in questions:
            if q.kind in FILE_QUESTIONS:
                for pr in q.prs:
                    asked.setdefault(pr, []).append(q.id)
    rows = []
    for c in window.commits:
        label = c.pr if c.pr is not None else c.sha[:8]
        mine = None if asked is None else asked.get(label, [])
        disposition, reason = _disposition(c.files, by_upstream, mine)
        rows.append(LedgerRow(c.sha, c.pr, name, disposition, commits.get(c.sha, ""), c.title, reason))
    return rows


def merge_rows(previous: list[LedgerRow], new: list[LedgerRow]) -> list[LedgerRow]:
    """``previous`` with ``new`` appended; a commit already listed takes its new row in place."""
    fresh = {r.sha: r for r in new}
    kept = [fresh.pop(r.sha, r) for r in previous]
    return kept + [r for r in new if r.sha in fresh]


def set_disposition(rows: list[LedgerRow], pr: int, disposition: str, reason: str) -> list[LedgerRow]:
    """Mark PR ``pr`` by hand (ported, excluded, ...): a one-line change of the file."""
    if disposition not in BY_HAND:
        raise LedgerError(
            f"disposition {disposition!r} cannot be set by hand; use one of {', '.join(BY_HAND)}"
        )
    if not any(r.pr == pr for r in rows):
        raise LedgerError(f"PR #{pr} is not in the ledger; sync the window that holds it first")
    return [
        replace(r, disposition=Disposition(disposition), reason=reason) if r.pr == pr else r for r in rows
    ]


def render_ledger_md(rows: list[LedgerRow]) -> str:
    """LEDGER.md: counts by disposition, then every commit by window (merge order)."""
    from sync.markdown import table

    counts = Counter(r.disposition for r in rows)
    out = [
        "# Ledger: every upstream commit a sync took",
        "",
        f"{len(rows)} upstream commits in {len({r.window for r in rows})} windows: "
        + ", ".join(f"{counts[d]} {d}" for d in Disposition if counts[d])
        + ". Source: `.vime-sync/ledger` (one row per commit; `vime-sync ledger --pr N` answers where a PR went).",
    ]
    followed = any(r.follow for r in rows)
    for window in dict.fromkeys(r.window for r in rows):
        out += ["", f"## {window}", ""]
        out += table(
            ["PR", "upstream", "title", "disposition", "vime commit", "reason", *([FOLLOW_FIELD] * followed)],
            [[r.label, f"`{r.sha[:10]}`", r.title, r.disposition, r.downstream[:10] or "-", r.reason,
              *([r.follow.cell() if r.follow else "-"] * followed)]
             for r in rows if r.window == window],
        )  # fmt: skip
    return "\n".join(out) + "\n"


def ledger_files(rows: list[LedgerRow]) -> dict[str, bytes]:
    return {LEDGER_PATH: dump_ledger(rows), LEDGER_MD: to_utf8(render_ledger_md(rows))}


def _per_pr_commits(downstream: Path, rev: str) -> dict[tuple[str, str], str]:
    """(window, PR label) -> the ``--per-pr`` commit that merged it, from the sync commits' subjects."""
    try:
        log = git(downstream, "log", "--format=%H%x00%s", f"--grep=^{SYNC_SUBJECT_PREFIX}", rev).decode(
            "utf-8", "replace"
        )
    except GitError:
        return {}
    found = {}
    for line in log.splitlines():
        sha, _, subject = line.partition("\0")
        parsed = parse_per_pr_subject(subject)
        if parsed is not None:
            found.setdefault((parsed.window, parsed.ref), sha)
    return found


def fill_downstream(downstream: Path, rows: list[LedgerRow], rev: str = "HEAD") -> list[LedgerRow]:
    """Rows without a vime commit take their ``--per-pr`` commit, else the commit that added the row
    (the window's commit 1)."""
    per_pr = _per_pr_commits(downstream, rev)
    found: dict[str, str] = {}
    out = []
    for r in rows:
        if r.downstream:
            out.append(r)
            continue
        if (r.window, r.label) in per_pr:
            out.append(replace(r, downstream=per_pr[(r.window, r.label)]))
            continue
        if r.sha not in found:
            try:
                log = git(downstream, "log", "--format=%H", "--reverse", f"-S{r.sha}", rev, "--", LEDGER_PATH)
            except GitError:
                log = b""
            found[r.sha] = (log.decode().split() or [""])[0]
        out.append(replace(r, downstream=found[r.sha]))
    return out


def where_is(
    rows: list[LedgerRow],
    pr: int,
    merged_upstream: Callable[[int], UpstreamCommit | None] | None = None,
    upstream_ref: str = "HEAD",
) -> str:
    """The answer to "where is upstream PR #N?" from the ledger, and from the upstream's history when
    ``merged_upstream`` (PR number -> the first-parent commit at ``upstream_ref`` that merged it) is given."""
    hits = [r for r in rows if r.pr == pr]
    if not hits and merged_upstream is not None:
        c = merged_upstream(pr)
        if c is None:
            return f"PR #{pr} is not merged on the upstream's first-parent history ({upstream_ref})"
        return (
            f"PR #{pr} {c.title!r} merged upstream as {c.sha[:10]} ({c.date}) after the last synced window: "
            "the next `vime-sync window` takes it"
        )
    if not hits:
        windows = sorted({r.window for r in rows})
        return f"PR #{pr} is in no synced window (windows: {', '.join(windows) or 'none yet'}): not merged yet, or merged upstream after the last sync"
    lines = []
    for r in hits:
        at = f", vime commit {r.downstream[:10]}" if r.downstream else ""
        lines.append(
            f"PR #{pr} {r.title!r} (upstream {r.sha[:10]}): window {r.window}, {r.disposition}{at} — {r.reason}"
        )
    return "\n".join(lines)
