"""Judge each hunk of one upstream file against the downstream file (plain data in, accounts out).

A hunk is accounted for when every non-blank line it wrote is in the downstream file (``present``)
or was rewritten by a later PR (``superseded``, naming it), and no line it removed is still there;
otherwise the lines that are missing or still carried must be explained: the path is not mirrored
(``excluded``, naming the rule or layout entry), vime owns it (``port``, a pending port request),
a recorded answer kept ours or edited (``decided``, naming the window and question), the question
still waits for a person (``waiting``), or the ledger marks the PR ported or excluded by hand
(``marked``). Anything else is an ``omission``, with the file, the line and the PR.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from sync.audit.decided import Answer
from sync.audit.lines import PR, Hunk, Replay, split
from sync.model.outcome import WHOLE_FILE_ANSWERS
from sync.model.question import HUNK_KINDS, LINE_KINDS, QuestionKind

CATEGORIES = (
    "present",
    "superseded",
    "vanished",
    "excluded",
    "port",
    "decided",
    "waiting",
    "marked",
    "omission",
)


@dataclass(frozen=True)
class Account:
    """What became of one hunk (or of one PR's change to a file that is not mirrored)."""

    pr: PR
    upstream: str
    file: str | None  # the downstream path (None: not mirrored)
    line: int  # 1-based, in the translated upstream file after the PR
    category: str
    why: str
    text: str = ""  # the first line in question (omissions)


@dataclass
class FileFacts:
    """What the downstream has for one upstream file: its mapped path and content, and the answers."""

    upstream: str
    path: str | None
    content: bytes | None
    excluded: str | None = None  # why the path is not mirrored (rule or layout entry)
    port: str | None = None  # the layout entry that makes it vime-owned
    answers: list[Answer] = field(default_factory=list)
    marks: dict[PR, str] = field(default_factory=dict)  # PR -> "ported: reason" / "excluded: reason"


def _key(line: bytes) -> bytes:
    return line.strip()


def _pr_label(pr: PR) -> str:
    return f"#{pr}" if isinstance(pr, int) else str(pr)


@dataclass
class _Downstream:
    """The downstream file against the upstream file's last version: which identities it has, and the
    blocks of lines it has there that upstream's last version lacks, with where they sit."""

    has: set[int]
    blocks: list[tuple[int, int, set[bytes]]]  # (first gap, last gap, lines): gap i is before final line i
    where: dict[int, int]  # identity -> its index in the last version

    @classmethod
    def of(cls, r: Replay, content: bytes | None) -> _Downstream:
        final = [r.text[i] for i in r.final]
        down = split(content)
        has: set[int] = set()
        blocks = []
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, final, down, autojunk=False).get_opcodes():
            if tag == "equal":
                has.update(r.final[i1:i2])
            elif j2 > j1:
                blocks.append((i1, i2, {_key(line) for line in down[j1:j2] if _key(line)}))
        return cls(has, blocks, {ident: n for n, ident in enumerate(r.final)})

    def carried(self, r: Replay, h: Hunk) -> list[int]:
        """The lines ``h`` removed that the downstream still has where they were (between the lines
        around the hunk, when those lines are still in upstream's last version)."""
        lo = -1 if h.before is None else self.where.get(h.before)
        hi = len(self.where) if h.after is None else self.where.get(h.after)
        if lo is None or hi is None:  # the place itself was rewritten later: nothing to look at
            return []
        here: set[bytes] = set()
        for first, last, lines in self.blocks:
            if first <= hi and last >= lo + 1:
                here |= lines
        return [i for i in h.removed if _key(r.text[i]) and _key(r.text[i]) in here]


def _explain(facts: FileFacts, pr: PR, missing: list[bytes], carried: list[bytes]) -> tuple[str, str] | None:
    """(category, why) for lines that did not land as upstream wrote them, or None (an omission)."""
    if pr in facts.marks:
        return "marked", f"ledger: {facts.marks[pr]}"
    if facts.port:
        return "port", f"port request ({facts.port})"
    used: list[Answer] = []
    for line in missing:
        a = next((a for a in facts.answers if _explains_missing(a, line)), None)
        if a is None:
            return None
        used.append(a)
    for line in carried:
        a = next((a for a in facts.answers if _explains_carried(a, line)), None)
        if a is None:
            return None
        used.append(a)
    if not used:
        return None
    names = ", ".join(dict.fromkeys(a.name + (f" ({a.decision})" if a.decision else "") for a in used))
    if any(a.decision is None for a in used):
        return "waiting", f"question not answered yet: {names}"
    if all(a.kind == QuestionKind.PORT for a in used):
        return "port", f"port request answered {used[0].decision}: {names}"
    return "decided", f"recorded answer {names}"


def _explains_missing(a: Answer, line: bytes) -> bool:
    if not a.drops_theirs():
        return False
    if a.kind in WHOLE_FILE_ANSWERS:
        return True
    if a.kind in HUNK_KINDS:
        return line in {_key(x) for x in a.theirs}
    return a.kind in LINE_KINDS and a.decision == "edit" and line in {_key(x) for x in a.theirs}


def _explains_carried(a: Answer, line: bytes) -> bool:
    if not a.keeps_ours():
        return False
    if a.kind in WHOLE_FILE_ANSWERS:
        return True
    return a.kind in HUNK_KINDS and line in {_key(x) for x in a.ours}


def judge(r: Replay, facts: FileFacts, in_range: set[PR]) -> list[Account]:
    """An account for every hunk that a PR in ``in_range`` made to this file."""
    hunks = [h for h in r.hunks if h.pr in in_range]
    if facts.excluded is not None:
        return [
            Account(h.pr, facts.upstream, None, h.line, "excluded", facts.excluded)
            for h in _one_per_pr(hunks)
        ]
    down = _Downstream.of(r, facts.content)
    alive = set(r.final)
    out = []
    for h in hunks:
        added = [i for i in h.added if _key(r.text[i])]
        removed = [i for i in h.removed if _key(r.text[i])]
        missing = [i for i in added if i in alive and i not in down.has]
        carried = down.carried(r, h)
        first = (missing + carried + added + removed + [-1])[0]
        text = r.text[first].decode("utf-8", "replace").strip() if first >= 0 else ""
        if not missing and not carried:
            later = sorted({_pr_label(r.removed_by[i]) for i in added if i not in alive})
            if added and all(i not in alive for i in added):
                out.append(
                    Account(h.pr, facts.upstream, facts.path, h.line, "superseded", f"by {', '.join(later)}")
                )
            else:
                why = (
                    f"partly superseded by {', '.join(later)}"
                    if later
                    else ("deletion applied" if not added else "")
                )
                out.append(Account(h.pr, facts.upstream, facts.path, h.line, "present", why))
            continue
        found = _explain(facts, h.pr, [_key(r.text[i]) for i in missing], [_key(r.text[i]) for i in carried])
        if found is None:
            what = (
                f"{len(missing)} line(s) it wrote are not in {facts.path}" if missing
                else f"{len(carried)} line(s) it removed are still in {facts.path}"
            )  # fmt: skip
            if facts.content is None:
                what = f"{facts.path} is missing downstream"
            out.append(Account(h.pr, facts.upstream, facts.path, h.line, "omission", what, text))
        else:
            out.append(Account(h.pr, facts.upstream, facts.path, h.line, found[0], found[1], text))
    return out


def _one_per_pr(hunks: list[Hunk]) -> list[Hunk]:
    seen: dict[PR, Hunk] = {}
    for h in hunks:
        seen.setdefault(h.pr, h)
    return list(seen.values())
