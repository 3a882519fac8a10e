"""The downstream repository's review-queue settings: ``.vime-sync/review.toml``.

    [conformance]
    # conformance findings in files matching these globs are proposed "keep" (tier Confirm)
    # instead of asked (tier Decide); [] asks every finding
    confirm_in = ["tests/*", "*/tests/*", "test_*.py", "*/test_*.py", "conftest.py", "*/conftest.py"]

Why the default: a conformance finding says a translated line calls an HTTP route vLLM does not
accept or imports a name vime does not have. In a file the downstream runs when it serves or trains
that breaks silently at run time, so a person must decide before the PR lands. A test file runs only
when its tests run, and there the same line fails loudly (the gate's contracts, the downstream's
CI), so the finding is proposed "keep" (the translated line stays, as a reviewer would keep it) and
listed in the queue like any Confirm question: in QUESTIONS.md, decisions.json, review.html and
the tiers ``status`` counts, never dropped. Globs match the downstream path with ``fnmatch`` (``*``
crosses ``/``), as ``[static] exclude`` in gate.toml does. The file is read as committed at the
commit the sync branch starts from, like the recorded decisions, so a window's queue depends only
on committed state.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass
from pathlib import Path

from sync.gitio import GitError, git
from sync.model.errors import SyncError
from sync.textio import decode_utf8

REVIEW_CONFIG_PATH = ".vime-sync/review.toml"
#: upstream-style test files: a ``tests`` folder anywhere, ``test_*.py`` and ``conftest.py``
DEFAULT_CONFIRM_IN: tuple[str, ...] = (
    "tests/*",
    "*/tests/*",
    "test_*.py",
    "*/test_*.py",
    "conftest.py",
    "*/conftest.py",
)


@dataclass(frozen=True)
class ReviewConfig:
    """How the review queue tiers questions that a downstream may want to tier its own way."""

    conformance_confirm_in: tuple[str, ...] = DEFAULT_CONFIRM_IN
    source: str | None = None  # the config file, when there is one

    def confirm_glob(self, path: str) -> str | None:
        """The first ``confirm_in`` glob ``path`` matches (its conformance findings are Confirm), else None."""
        return next((g for g in self.conformance_confirm_in if fnmatch.fnmatchcase(path, g)), None)


def parse_review_config(text: str, where: str) -> ReviewConfig:
    """A ReviewConfig from the TOML ``text`` of ``where``; SyncError names the entry and the fix."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SyncError(f"{where}: not valid TOML ({exc}); fix the syntax") from None
    unknown = sorted(set(data) - {"conformance"})
    if unknown:
        raise SyncError(f"{where}: unknown table [{unknown[0]}]; the file has only [conformance]")
    section = data.get("conformance", {})
    if not isinstance(section, dict):
        raise SyncError(f"{where}: conformance must be a table: [conformance]")
    extra = sorted(set(section) - {"confirm_in"})
    if extra:
        raise SyncError(f"{where}: [conformance] has no setting {extra[0]!r}; the one setting is confirm_in")
    globs = section.get("confirm_in", list(DEFAULT_CONFIRM_IN))
    if not isinstance(globs, list) or not all(isinstance(g, str) and g for g in globs):
        raise SyncError(
            f'{where}: [conformance] confirm_in must be a list of glob strings (e.g. ["tests/*"]), '
            "or [] to ask every finding"
        )
    return ReviewConfig(tuple(globs), where)


def load_review_config(downstream: Path, rev: str = "HEAD") -> ReviewConfig:
    """The settings committed at ``rev``; the defaults without the file."""
    try:
        raw = git(downstream, "show", f"{rev}:{REVIEW_CONFIG_PATH}")
    except GitError:
        return ReviewConfig()
    text = decode_utf8(raw, f"{REVIEW_CONFIG_PATH} (committed at {rev})", "save it as UTF-8")
    return parse_review_config(text, REVIEW_CONFIG_PATH)
