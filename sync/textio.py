"""Text in and out of files, with failures that name the file and the fix.

Why: a ``UnicodeDecodeError`` or ``PermissionError`` carries no hint of which of a run's many files
it came from, and git paths are bytes: a file name that is not UTF-8 (kept in ``str`` with
``surrogateescape``) must not make a report impossible to write.
"""

from __future__ import annotations

from pathlib import Path

from sync.model.errors import SyncError


def to_utf8(text: str) -> bytes:
    """``text`` as UTF-8; bytes that were not UTF-8 (surrogate escapes, e.g. in a file name) are shown
    as ``\\xNN``, so a report stays valid UTF-8 and still says which bytes they were."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogateescape")
        return raw.decode("utf-8", "backslashreplace").encode("utf-8", "backslashreplace")


def decode_utf8(data: bytes, where: str, fix: str) -> str:
    """``data`` decoded, or SyncError naming ``where`` (a file) and ``fix``."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SyncError(f"{where} is not UTF-8 text ({exc.reason} at byte {exc.start}); {fix}") from None


def read_utf8(path: Path, fix: str, shown: str | None = None) -> str:
    """The text of ``path``; SyncError (one line, the file and ``fix``) if it cannot be read or decoded."""
    where = shown or str(path)
    try:
        data = path.read_bytes()
    except PermissionError:
        raise SyncError(
            f"{where} cannot be read (permission denied); give your user read access to it"
        ) from None
    except IsADirectoryError:
        raise SyncError(f"{where} is a folder, not a file; {fix}") from None
    return decode_utf8(data, where, fix)


def read_text(path: Path) -> str | None:
    """The file as text, or None for a binary file (a NUL byte in its first 8 KiB)."""
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")
