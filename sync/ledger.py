"""The ledger: every upstream first-parent commit that a sync window took, and what became of it.

Kept in the downstream as ``.vime-sync/ledger`` across windows, one tab-separated row per upstream
commit in merge order (diff-friendly: a window appends its rows, a hand edit changes one line)::

    sha  pr  window  disposition  downstream  title  reason

Dispositions: ``mirrored`` (its changes landed), ``review`` (a conflict or file question of the
window comes from its changes), ``port`` (a port request: the path is vime-owned or was never in
vime), ``no_effect`` (nothing changes after translation), ``not_mirrored`` (the rules do not mirror
its paths), ``empty`` (no files), and by hand ``ported`` / ``excluded``. ``downstream`` is the vime commit that took it (the
per-PR commit, or empty: then the commit that added the row, found by ``vime-sync ledger``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sync.window.filemerge import FileOutcome
from sync.window.gitio import GitError, git
from sync.window.history import Window

LEDGER_PATH = ".vime-sync/ledger"
LEDGER_MD = ".vime-sync/LEDGER.md"
HEADER = "# vime-sync ledger v1: sha\tpr\twindow\tdisposition\tdownstream\ttitle\treason"
FIELDS = ("sha", "pr", "window", "disposition", "downstream", "title", "reason")
DISPOSITIONS = ("mirrored", "review", "port", "no_effect", "not_mirrored", "empty", "ported", "excluded")
BY_HAND = ("ported", "excluded", "mirrored", "port")

_PER_PR_SUBJECT = re.compile(r"^sync\(slime #(\d+)\.\.#(\d+)\) \d+/\d+: (#\d+|[0-9a-f]{8}) ")
_MIRRORED = ("theirs", "clean", "structural", "new", "deleted")
_REVIEW = ("conflict", "add_add", "modify_delete", "binary")


class LedgerError(ValueError):
    """The ledger file cannot be read, or a request names nothing in it; one line with the fix."""


@dataclass(frozen=True)
class LedgerRow:
    sha: str
    pr: int | None
    window: str
    disposition: str
    downstream: str
    title: str
    reason: str

    def line(self) -> str:
        cells = [self.sha, str(self.pr) if self.pr is not None else "-", self.window, self.disposition,
                 self.downstream or "-", self.title, self.reason]  # fmt: skip
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
        if len(cells) != len(FIELDS):
            raise LedgerError(
                f"{source} line {n}: {len(cells)} fields, expected {len(FIELDS)}; fix that line"
            )
        sha, pr, window, disposition, downstream, title, reason = cells
        if disposition not in DISPOSITIONS:
            raise LedgerError(
                f"{source} line {n}: unknown disposition {disposition!r}; use one of {DISPOSITIONS}"
            )
        number = None if pr == "-" else int(pr) if pr.isdigit() else None
        rows.append(
            LedgerRow(
                sha, number, window, disposition, "" if downstream == "-" else downstream, title, reason
            )
        )
    return rows


def dump_ledger(rows: list[LedgerRow]) -> bytes:
    return ("\n".join([HEADER, *(r.line() for r in rows)]) + "\n").encode()


def load_ledger(downstream: Path, rev: str = "HEAD") -> list[LedgerRow]:
    """The ledger committed at ``rev`` (empty before the first window)."""
    try:
        text = git(downstream, "show", f"{rev}:{LEDGER_PATH}").decode("utf-8", "replace")
    except GitError:
        return []
    return parse_ledger(text)


def _disposition(
    files: tuple[str, ...], by_upstream: dict[str, FileOutcome], asked: list[str] | None
) -> tuple[str, str]:
    """A commit's disposition from what happened to the files it touched, and a short reason.

    ``asked``: the questions whose hunks or sites this commit's changes produced (per-hunk
    provenance); None when not known, then any question in one of its files counts.
    """
    if not files:
        return "empty", "no files changed"
    seen = [(f, by_upstream.get(f)) for f in files]
    kinds = Counter(o.outcome if o else "no_net_change" for _, o in seen)
    parts = [f"{n} {k}" for k, n in sorted(kinds.items())]
    if asked:
        shown = ", ".join(asked[:4]) + (" ..." if len(asked) > 4 else "")
        return "review", f"{', '.join(parts)}; questions {shown}"
    if asked is None and any(k in _REVIEW for k in kinds):
        files_asked = sorted({o.path for _, o in seen if o and o.outcome in _REVIEW})
        return (
            "review",
            f"{', '.join(parts)}; questions in {', '.join(files_asked[:3])}{' ...' if len(files_asked) > 3 else ''}",
        )
    if "port" in kinds:
        ports = sorted({o.path for _, o in seen if o and o.outcome == "port"})
        return (
            "port",
            f"{', '.join(parts)}; port by hand: {', '.join(ports[:3])}{' ...' if len(ports) > 3 else ''}",
        )
    if any(k in _MIRRORED + _REVIEW for k in kinds):
        return "mirrored", ", ".join(parts)
    if set(kinds) <= {"not_mirrored"}:
        notes = sorted({o.note for _, o in seen if o and o.note})
        return "not_mirrored", "; ".join(notes) or "the rules do not mirror its paths"
    return "no_effect", ", ".join(parts) + " (no change after translation, or undone later in the window)"


def window_rows(
    window: Window,
    name: str,
    outcomes: list[FileOutcome],
    downstream_commits: dict[str, str] | None = None,
    questions: list[Any] | None = None,
) -> list[LedgerRow]:
    """One row per first-parent commit of the window, in merge order.

    With ``questions`` (sync.reports.questions.Question), a commit is ``review`` only when a
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
            if q.kind in _REVIEW:
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
    return [replace(r, disposition=disposition, reason=reason) if r.pr == pr else r for r in rows]


def render_ledger_md(rows: list[LedgerRow]) -> str:
    """LEDGER.md: counts by disposition, then every commit by window (merge order)."""
    from sync.reports.markdown import table

    counts = Counter(r.disposition for r in rows)
    out = [
        "# Ledger: every upstream commit a sync took",
        "",
        f"{len(rows)} upstream commits in {len({r.window for r in rows})} windows: "
        + ", ".join(f"{counts[d]} {d}" for d in DISPOSITIONS if counts[d])
        + ". Source: `.vime-sync/ledger` (one row per commit; `vime-sync ledger --pr N` answers where a PR went).",
    ]
    for window in dict.fromkeys(r.window for r in rows):
        out += ["", f"## {window}", ""]
        out += table(
            ["PR", "upstream", "title", "disposition", "vime commit", "reason"],
            [[r.label, f"`{r.sha[:10]}`", r.title, r.disposition, r.downstream[:10] or "-", r.reason]
             for r in rows if r.window == window],
        )  # fmt: skip
    return "\n".join(out) + "\n"


def ledger_files(rows: list[LedgerRow]) -> dict[str, bytes]:
    return {LEDGER_PATH: dump_ledger(rows), LEDGER_MD: render_ledger_md(rows).encode()}


def _per_pr_commits(downstream: Path, rev: str) -> dict[tuple[str, str], str]:
    """(window, PR label) -> the ``--per-pr`` commit that merged it, from the sync commits' subjects."""
    try:
        log = git(downstream, "log", "--format=%H%x00%s", "--grep=^sync(slime #", rev).decode(
            "utf-8", "replace"
        )
    except GitError:
        return {}
    found = {}
    for line in log.splitlines():
        sha, _, subject = line.partition("\0")
        m = _PER_PR_SUBJECT.match(subject)
        if m:
            found.setdefault((f"slime-{m.group(1)}-{m.group(2)}", m.group(3)), sha)
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


def where_is(rows: list[LedgerRow], pr: int, upstream: Path | None = None, upstream_ref: str = "HEAD") -> str:
    """The answer to "where is upstream PR #N?" from the ledger (and the upstream's history, if given)."""
    hits = [r for r in rows if r.pr == pr]
    if not hits and upstream is not None:
        from sync.window.history import find_pr_commit, first_parent_log

        c = find_pr_commit(first_parent_log(upstream, upstream_ref), pr)
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
