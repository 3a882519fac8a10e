"""What the sync does to one file: the outcome values, and the groups the stages ask about, defined once."""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    """A file's outcome, in the order SUMMARY.md lists them. The values are what the reports and
    decisions.json spell, so a member compares and serializes as its plain string."""

    THEIRS = "theirs"  # downstream untouched since the last sync: exactly the translation
    CLEAN = "clean"  # both sides changed, merged line by line
    STRUCTURAL = "structural"  # line conflict settled per top-level statement
    UNCHANGED = "unchanged"  # no effect downstream
    CONFLICT = "conflict"  # diff3 markers kept
    ADD_ADD = "add_add"  # added on both sides with different content (markers)
    NEW = "new"
    DELETED = "deleted"
    MODIFY_DELETE = "modify_delete"  # deleted on one side, changed on the other
    BINARY = "binary"  # binary changed on both sides
    PORT = "port"  # vime-owned or never in vime: a port request
    NOT_MIRRORED = "not_mirrored"  # the rules do not mirror the path
    LINE_ENDINGS = "line_endings"  # one side converted CRLF/LF
    MODE = "mode"  # upstream changed only the executable bit


#: outcomes whose file carries diff3 conflict markers (one question per hunk)
WITH_MARKERS = frozenset({Outcome.CONFLICT, Outcome.ADD_ADD})
#: outcomes that leave a file question for a person (the ledger's ``review``)
FILE_QUESTIONS = frozenset({Outcome.CONFLICT, Outcome.ADD_ADD, Outcome.MODIFY_DELETE, Outcome.BINARY})
#: outcomes whose upstream change landed downstream (the ledger's ``mirrored``)
MIRRORED = frozenset({
    Outcome.THEIRS, Outcome.CLEAN, Outcome.STRUCTURAL, Outcome.NEW, Outcome.DELETED, Outcome.LINE_ENDINGS,
    Outcome.MODE,
})  # fmt: skip
#: the commit message's "clean merges": landed without a person and without a per-definition merge
CLEAN_MERGES = frozenset(
    {Outcome.THEIRS, Outcome.CLEAN, Outcome.UNCHANGED, Outcome.LINE_ENDINGS, Outcome.MODE}
)
#: outcomes asked about as a whole file, so no translation notes are asked inside them
ASKED_AS_A_FILE = FILE_QUESTIONS | {Outcome.PORT}
#: outcomes where nothing lands in the tree: listed only
NOTHING_LANDS = frozenset({Outcome.PORT, Outcome.NOT_MIRRORED})
#: file questions answered for the whole file at once (no markers): an answer keeps or drops all of it
WHOLE_FILE_ANSWERS = frozenset({Outcome.MODIFY_DELETE, Outcome.BINARY, Outcome.PORT})
