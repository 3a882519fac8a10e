"""The window's file -> PRs map, read one way for ``vime-sync gate`` and for the gate that ``resolve`` runs:
``--file-prs``, else ``file_prs.json`` or ``decisions.json`` in the report folder. A direct push keeps
its short sha as its label, so both name the same PRs."""

from __future__ import annotations

import json
from pathlib import Path

FILE_PRS_JSON = "file_prs.json"  # {path: [PR, ...]}, when a tool writes the map on its own
DECISIONS_JSON = "decisions.json"  # the window's review file: {"files": {path: {"prs": [...]}}}


class FilePRsError(ValueError):
    """A file -> PRs map that cannot be read; the message is one line naming the file."""


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise FilePRsError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except UnicodeDecodeError:
        raise FilePRsError(f"{path} is not UTF-8 text; save it as UTF-8 JSON") from None


def _as_file_prs(mapping: object, path: Path) -> dict[str, list[int | str]]:
    if not isinstance(mapping, dict) or not all(isinstance(v, list) for v in mapping.values()):
        raise FilePRsError(f"{path} must map file paths to lists of PR numbers")
    return {str(k): [pr if isinstance(pr, int) else str(pr) for pr in v] for k, v in mapping.items()}


def load_file_prs(report_dir: Path, explicit: Path | None) -> tuple[dict[str, list[int | str]], str | None]:
    """The file -> PRs map: ``--file-prs``, else ``file_prs.json`` or ``decisions.json`` in the report."""
    if explicit is not None:
        if not explicit.is_file():
            raise FilePRsError(f"--file-prs {explicit} not found")
        return _as_file_prs(_read_json(explicit), explicit), None
    if (report_dir / FILE_PRS_JSON).is_file():
        return _as_file_prs(_read_json(report_dir / FILE_PRS_JSON), report_dir / FILE_PRS_JSON), None
    if (report_dir / DECISIONS_JSON).is_file():
        files = _read_json(report_dir / DECISIONS_JSON)
        files = files.get("files", {}) if isinstance(files, dict) else {}
        mapping = {path: info.get("prs", []) for path, info in files.items() if isinstance(info, dict)}
        return _as_file_prs(mapping, report_dir / DECISIONS_JSON), None
    return {}, f"no {FILE_PRS_JSON} or {DECISIONS_JSON} in {report_dir}: failures name files but not PRs"
