"""Non-Python files: word-bounded text rules chosen by the file's context (Markdown, shell, …)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from sync.translator.compiled import CompiledRules
from sync.translator.model import Applied, Hit
from sync.translator.scan import snippet

_SUFFIXES = {
    ".md": "markdown",
    ".rst": "markdown",
    ".txt": "markdown",
    ".sh": "shell",
    ".bash": "shell",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "yaml",
    ".json": "yaml",
    ".py": "prose",  # an unparseable .py: prose rules are the safe subset
}


def text_context(path: str) -> str:
    name = PurePosixPath(path).name
    if name.startswith("Dockerfile") or name.endswith(".dockerfile"):
        return "dockerfile"
    if name.startswith("requirements") and name.endswith(".txt"):
        return "requirements"
    return _SUFFIXES.get(PurePosixPath(path).suffix.lower(), "other")


# Fenced blocks and inline code spans of Markdown: code, not prose (`sglang:` is a YAML key there).
_MD_CODE = re.compile(r"(?ms)^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$|`[^`\n]+`")


def _rewrite_markdown(
    text: str, rules: CompiledRules
) -> tuple[str, list[tuple[str, int]], list[tuple[str, int]]]:
    pieces: list[str] = []
    applied: list[tuple[str, int]] = []
    hits: list[tuple[str, int]] = []
    last = 0
    for match in [*_MD_CODE.finditer(text), None]:
        start, end = (match.start(), match.end()) if match else (len(text), len(text))
        for segment, context, offset in (
            (text[last:start], "markdown", last),
            (text[start:end], "code", start),
        ):
            if not segment:
                continue
            new, seg_applied, seg_hits = rules.rewrite_text(segment, context)
            line = text.count("\n", 0, offset)
            applied.extend((rule_id, line + rel) for rule_id, rel in seg_applied)
            hits.extend((rule_id, line + rel) for rule_id, rel in seg_hits)
            pieces.append(new)
        last = end
    return "".join(pieces), applied, hits


def translate_text(text: str, path: str, rules: CompiledRules) -> tuple[str, list[Applied], list[Hit]]:
    if not rules.trigger.search(text):
        return text, [], []
    context = text_context(path)
    if context == "markdown":
        new, applied, hits = _rewrite_markdown(text, rules)
    else:
        new, applied, hits = rules.rewrite_text(text, context)
    lines = new.split("\n")
    return (
        new,
        [Applied(rule_id, offset + 1) for rule_id, offset in applied],
        [
            Hit(rule_id, offset + 1, snippet(lines[offset]) if offset < len(lines) else "")
            for rule_id, offset in hits
        ],
    )
