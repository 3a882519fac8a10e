"""Small Markdown helpers shared by SUMMARY.md and QUESTIONS.md (escaping, tables, fences)."""

from __future__ import annotations

import re


def cell(value: object) -> str:
    """A table cell: pipes escaped, newlines flattened."""
    return str(value).replace("|", "\\|").replace("\n", " ").strip()


def table(header: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def fenced(text: str, lang: str = "", max_lines: int = 60) -> list[str]:
    """A code fence longer than any backtick run inside ``text`` (truncated to ``max_lines``)."""
    body = text.splitlines()
    if len(body) > max_lines:
        body = body[:max_lines] + [f"... ({len(text.splitlines()) - max_lines} more lines)"]
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + lang, *body, fence]


def pr_ref(pr: int | str) -> str:
    return f"#{pr}" if isinstance(pr, int) else str(pr)


def pr_list(prs: list[int | str]) -> str:
    return ", ".join(pr_ref(p) for p in prs) or "-"
