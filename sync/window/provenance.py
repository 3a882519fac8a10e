"""Per-hunk provenance: which upstream PRs produced each line of a translated file.

The window is replayed PR by PR on one file (as ``--per-pr`` replays it on the tree): the file's
translation at the cutoff, then after every first-parent commit that touched it. Lines are tracked
through each step's diff, so every line of theirs knows the PRs that wrote it, every line of base
knows the PRs that changed or deleted it, and a deletion is charged to the line that follows it.
A conflict hunk's PRs are those of its theirs lines plus those that changed its base lines.
Computed lazily, only for files the review queue asks about; the window translates their versions
ahead in its worker pool (``versions_to_translate``), with a translator that skips the conformance
check (only the text of an intermediate version matters here).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sync.gitio import blob_at
from sync.gitio import blob_ids as batch_blob_ids
from sync.merge.filemerge import FileOutcome
from sync.window.history import UpstreamCommit, Window
from sync.window.translation import Translated

PR = int | str


def blob_ids(repo: Path, specs: list[tuple[str, str]]) -> dict[tuple[str, str], str | None]:
    """The blob id of each (commit, path), or None where absent: one ``git cat-file --batch-check``
    for all of them (a process per look-up costs seconds on a long window)."""
    found = batch_blob_ids(repo, specs)
    for commit, path in specs:  # a path git's batch input cannot carry
        if (commit, path) not in found:
            found[(commit, path)] = blob_at(repo, commit, path)
    return found


def pr_of(c: UpstreamCommit) -> PR:
    return c.pr if c.pr is not None else c.sha[:8]


@dataclass
class LineHistory:
    """Attribution of one file across the window: per final line, per base line, per gap before a line."""

    final: list[set[PR]] = field(default_factory=list)
    gaps: list[set[PR]] = field(default_factory=list)  # gaps[i]: PRs that deleted lines just before line i
    base_fate: list[set[PR]] = field(default_factory=list)
    base_lines: list[bytes] = field(default_factory=list)
    final_lines: list[bytes] = field(default_factory=list)


def replay(versions: list[tuple[PR, bytes]], base: bytes) -> LineHistory:
    """Track lines from ``base`` through each (PR, content) step, oldest first."""
    prev = base.splitlines(keepends=True)
    attr: list[set[PR]] = [set() for _ in prev]
    gaps: list[set[PR]] = [set() for _ in range(len(prev) + 1)]
    origin: list[int | None] = list(range(len(prev)))
    fate: list[set[PR]] = [set() for _ in prev]
    for pr, data in versions:
        cur = data.splitlines(keepends=True)
        new_attr: list[set[PR]] = []
        new_origin: list[int | None] = []
        new_gaps: list[set[PR]] = [set() for _ in range(len(cur) + 1)]
        ops = difflib.SequenceMatcher(None, prev, cur, autojunk=False).get_opcodes()
        for tag, i1, i2, j1, j2 in ops:
            if tag == "equal":
                for k in range(i2 - i1):
                    new_attr.append(attr[i1 + k])
                    new_origin.append(origin[i1 + k])
                    new_gaps[j1 + k] |= gaps[i1 + k]
                continue
            for i in range(i1, i2):
                o = origin[i]
                if o is not None:
                    fate[o].add(pr)
            for _ in range(j1, j2):
                new_attr.append({pr})
                new_origin.append(None)
            if tag == "delete":
                new_gaps[j1] |= {pr, *gaps[i1]}
        if ops and ops[-1][0] == "equal":
            new_gaps[len(cur)] |= gaps[len(prev)]
        prev, attr, origin, gaps = cur, new_attr, new_origin, new_gaps
    return LineHistory(attr, gaps, fate, base.splitlines(keepends=True), prev)


def locate(lines: list[bytes], chunk: bytes) -> range | None:
    """Where ``chunk`` (whole lines) sits in ``lines``: the first match, or None."""
    want = chunk.splitlines(keepends=True)
    if not want:
        return None
    n = len(want)
    for i in range(len(lines) - n + 1):
        if lines[i] == want[0] and lines[i : i + n] == want:
            return range(i, i + n)
    return None


class WindowProvenance:
    """The PRs behind hunks and lines of each outcome's theirs, by replaying the window on that file."""

    def __init__(
        self,
        upstream: Path,
        window: Window,
        translate: Callable[[str, str], Translated],
        order: list[PR] | None = None,
    ) -> None:
        self.upstream, self.window, self.translate = upstream, window, translate
        self.order = order or [pr_of(c) for c in window.commits]
        self._cache: dict[str, LineHistory | None] = {}
        self._oids: dict[tuple[str, str], str | None] = {}

    def _touching(self, out: FileOutcome) -> list[UpstreamCommit]:
        paths = {out.upstream_path, *([out.upstream_old] if out.upstream_old else [])}
        return [c for c in self.window.commits if paths.intersection(c.files)]

    def _blob(self, commit: str, path: str) -> str | None:
        if (commit, path) not in self._oids:
            self._oids[(commit, path)] = blob_at(self.upstream, commit, path)
        return self._oids[(commit, path)]

    def _version(self, out: FileOutcome, c: UpstreamCommit) -> tuple[str, str | None]:
        """(upstream path, blob id) of the file after commit ``c`` (its old path before a rename)."""
        oid = self._blob(c.sha, out.upstream_path)
        if oid is None and out.upstream_old:
            return out.upstream_old, self._blob(c.sha, out.upstream_old)
        return out.upstream_path, oid

    def versions_to_translate(self, outcomes: list[FileOutcome]) -> list[tuple[str, str]]:
        """Every (path, blob) the replay of these files will translate, with their blob ids looked up in
        one batch: the window translates them ahead, in its worker pool."""
        wanted = [(out, c) for out in outcomes if out.theirs is not None for c in self._touching(out)]
        specs = [(c.sha, p) for out, c in wanted for p in (out.upstream_path, out.upstream_old) if p]
        self._oids.update(blob_ids(self.upstream, [s for s in specs if s not in self._oids]))
        jobs = (self._version(out, c) for out, c in wanted)
        return list(dict.fromkeys((path, oid) for path, oid in jobs if oid is not None))

    def _versions(self, out: FileOutcome) -> list[tuple[PR, bytes]]:
        steps: list[tuple[PR, bytes]] = []
        for c in self._touching(out):
            path, oid = self._version(out, c)
            steps.append((pr_of(c), self.translate(path, oid).data if oid else b""))
        return steps

    def history(self, out: FileOutcome) -> LineHistory | None:
        if out.theirs is None:
            return None
        if out.path not in self._cache:
            base = out.base.data if out.base is not None else b""
            steps = self._versions(out)
            self._cache[out.path] = replay(steps, base) if steps else None
        return self._cache[out.path]

    def _sorted(self, prs: set[PR]) -> list[PR] | None:
        rank = {p: i for i, p in enumerate(self.order)}
        return sorted(prs, key=lambda p: rank.get(p, len(rank))) or None

    def hunk_prs(self, out: FileOutcome, base: bytes, theirs: bytes) -> list[PR] | None:
        h = self.history(out)
        if h is None:
            return None
        prs: set[PR] = set()
        at = locate(h.final_lines, theirs)
        if at is not None:
            for i in at:
                prs |= h.final[i]
            for i in range(at.start + 1, at.stop):
                prs |= h.gaps[i]
        at_base = locate(h.base_lines, base)
        if at_base is not None:
            for i in at_base:
                prs |= h.base_fate[i]
        if at is None and at_base is None:
            return None
        return self._sorted(prs)

    def line_prs(self, out: FileOutcome, line: int) -> list[PR] | None:
        h = self.history(out)
        if h is None or not 1 <= line <= len(h.final):
            return None
        return self._sorted(h.final[line - 1])

    def annotate(self, out: FileOutcome, diff: str) -> str:
        """``diff`` (base -> theirs of ``out``) with each hunk's PRs after its header."""
        h = self.history(out)
        return annotate_diff(diff, h, self.order) if h is not None else diff

    def regions(self, out: FileOutcome) -> list[dict[str, object]]:
        """Changed regions of theirs (1-based line ranges) with the PRs behind each, for decisions.json."""
        h = self.history(out)
        if h is None:
            return []
        spans: list[dict[str, object]] = []
        for i, prs in enumerate(h.final):
            if not prs:
                continue
            last = spans[-1] if spans else None
            if last and last["lines"][1] == i and set(last["prs"]) == prs:  # type: ignore[index]
                last["lines"][1] = i + 1  # type: ignore[index]
            else:
                spans.append({"lines": [i + 1, i + 1], "prs": self._sorted(prs)})
        return spans


_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def annotate_diff(diff: str, h: LineHistory, order: list[PR]) -> str:
    """A unified diff of base -> theirs with the PRs behind each hunk after its ``@@ ... @@`` header."""
    rank = {p: i for i, p in enumerate(order)}
    lines = diff.splitlines(keepends=True)
    out: list[str] = []
    header_at, prs = -1, set()

    def close() -> None:
        if header_at >= 0 and prs:
            ordered = sorted(prs, key=lambda p: rank.get(p, len(rank)))
            label = ", ".join(f"#{p}" if isinstance(p, int) else str(p) for p in ordered)
            out[header_at] = out[header_at].rstrip("\n") + f" PRs {label}\n"

    i = j = 0
    for line in lines:
        m = _HUNK.match(line)
        if m:
            close()
            header_at, prs = len(out), set()
            i, j = max(int(m.group(1)) - 1, 0), max(int(m.group(2)) - 1, 0)
        elif header_at >= 0 and line.startswith("-"):
            prs |= h.base_fate[i] if i < len(h.base_fate) else set()
            i += 1
        elif header_at >= 0 and line.startswith("+"):
            prs |= h.final[j] if j < len(h.final) else set()
            j += 1
        elif header_at >= 0 and line.startswith(" "):
            i, j = i + 1, j + 1
        out.append(line)
    close()
    return "".join(out)
