"""Non-Python files: word-bounded text rules chosen by the file's context (Markdown, shell, …)."""

from __future__ import annotations

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


def translate_text(text: str, path: str, rules: CompiledRules) -> tuple[str, list[Applied], list[Hit]]:
    if not rules.trigger.search(text):
        return text, [], []
    new, applied, hits = rules.rewrite_text(text, text_context(path))
    lines = new.split("\n")
    return (
        new,
        [Applied(rule_id, offset + 1) for rule_id, offset in applied],
        [
            Hit(rule_id, offset + 1, snippet(lines[offset]) if offset < len(lines) else "")
            for rule_id, offset in hits
        ],
    )
