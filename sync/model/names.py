"""The names of vime-sync's own artefacts, each written and read back in one place.

A window #A..#B is named ``slime-A-B`` (its report folder ``reports/slime-A-B``, its branch
``sync/slime-A-B``) and labelled ``slime #A..#B`` in commit subjects: ``sync(slime #A..#B): 3-way
merge``, ``...: resolve``, and per PR ``sync(slime #A..#B) i/n: #PR title`` (a direct push shows its
8-character short sha instead of ``#PR``); a follow step's gate commit is ``sync(slime #N..#N): follow
gate <verdict>``. The recorded decisions name the window they came from as ``A-B``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FOLLOW_BRANCH = "sync/follow"
# The last line of every commit 1 that follow makes: tells its steps from windows merged into the branch.
FOLLOW_TRAILER = "Made-by: vime-sync follow"
SUBJECT_PREFIX = "sync"  # the first word of every commit subject vime-sync writes: ``sync(<label>)...``
WINDOW_NAME_PREFIX = "slime-"
SYNC_SUBJECT_PREFIX = f"{SUBJECT_PREFIX}(slime #"  # every commit a window, resolve or follow makes starts so

_WINDOW_NAME = re.compile(r"slime-(\d+)-(\d+)")
_WINDOW_BRANCH = re.compile(r"sync/(slime-\d+-\d+)")
_PER_PR_SUBJECT = re.compile(
    "^" + re.escape(SYNC_SUBJECT_PREFIX) + r"(\d+)\.\.#(\d+)\) \d+/\d+: (#(\d+)|([0-9a-f]{8})) "
)


def window_name(from_pr: int, to_pr: int) -> str:
    """``slime-A-B``: the report folder's name and the ledger's window cell."""
    return f"{WINDOW_NAME_PREFIX}{from_pr}-{to_pr}"


def parse_window_name(name: str) -> tuple[int, int] | None:
    """(from, to) of ``slime-A-B``; None for any other text."""
    m = _WINDOW_NAME.fullmatch(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def window_span(name: str) -> str:
    """``A-B`` of ``slime-A-B``: how the recorded decisions name the window an answer came from (the
    name without its ``slime-`` prefix)."""
    return name.removeprefix(WINDOW_NAME_PREFIX)


def report_dir(from_pr: int, to_pr: int) -> str:
    """The window's report folder, relative to the downstream's root."""
    return f"reports/{window_name(from_pr, to_pr)}"


def branch_name(from_pr: int, to_pr: int) -> str:
    return f"sync/{window_name(from_pr, to_pr)}"


def window_name_of_branch(branch: str) -> str | None:
    """``slime-A-B`` of a window branch ``sync/slime-A-B``; None for any other branch (follow's too)."""
    m = _WINDOW_BRANCH.fullmatch(branch)
    return m.group(1) if m else None


def window_label(from_pr: int, to_pr: int) -> str:
    """``slime #A..#B``, as commit subjects spell the window."""
    return f"slime #{from_pr}..#{to_pr}"


def label_of_name(name: str) -> str:
    """The label of a window name: ``slime-A-B`` -> ``slime #A..#B`` (any other text stays as it is)."""
    parsed = parse_window_name(name)
    return window_label(*parsed) if parsed is not None else name


def merge_subject(label: str) -> str:
    """The subject of a window's commit 1 (``label``: ``window_label``)."""
    return f"{SUBJECT_PREFIX}({label}): 3-way merge"


def resolve_subject(label: str) -> str:
    """The subject of the commit ``resolve`` makes."""
    return f"{SUBJECT_PREFIX}({label}): resolve"


def follow_gate_subject(label: str, verdict: str) -> str:
    """The subject of the commit a follow step's gate makes (``label``: the PR's ``window_label``)."""
    return f"{SUBJECT_PREFIX}({label}): follow gate {verdict}"


def pr_ref(pr: int | None, sha: str) -> str:
    """``#PR``, or a direct push's 8-character short sha."""
    return f"#{pr}" if pr is not None else sha[:8]


def per_pr_subject(
    from_pr: int, to_pr: int, index: int, total: int, pr: int | None, sha: str, title: str
) -> str:
    """The subject of the ``--per-pr`` commit of one upstream PR (or direct push)."""
    return f"{SUBJECT_PREFIX}({window_label(from_pr, to_pr)}) {index}/{total}: {pr_ref(pr, sha)} {title}"


@dataclass(frozen=True)
class PerPRSubject:
    """What a per-PR commit's subject says: its window and the PR (or the direct push's short sha)."""

    from_pr: int
    to_pr: int
    pr: int | None
    short_sha: str | None

    @property
    def window(self) -> str:
        return window_name(self.from_pr, self.to_pr)

    @property
    def ref(self) -> str:
        """``#PR`` or the short sha, as the subject spells it."""
        return f"#{self.pr}" if self.pr is not None else str(self.short_sha)

    @property
    def label(self) -> int | str:
        """The PR number, or the direct push's short sha: how the ledger and the gate key a step."""
        return self.pr if self.pr is not None else str(self.short_sha)


def parse_per_pr_subject(subject: str) -> PerPRSubject | None:
    """A per-PR commit's subject read back; None for any other subject."""
    m = _PER_PR_SUBJECT.match(subject)
    if m is None:
        return None
    pr = int(m.group(4)) if m.group(4) else None
    return PerPRSubject(int(m.group(1)), int(m.group(2)), pr, m.group(5))
