"""Where whitespace is content: a "whitespace only" difference is safe to settle only where it is not.

In Python, YAML and Makefiles indentation is meaning (moving ``finalize(items)`` into a loop is a
one-indent change), so there only trailing whitespace and line endings count as "whitespace only".
The rule tables may name more files: ``indent_significant = ["*.rst", ...]`` in the text table.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sync.rules import RuleSet

INDENT_SIGNIFICANT = (
    "*.py", "*.pyi", "*.pyx", "*.yaml", "*.yml", "Makefile", "makefile", "GNUmakefile", "*.mk",
)  # fmt: skip


def rules_globs(rules: RuleSet | None) -> tuple[str, ...]:
    """Extra patterns from the rule tables (the ``indent_significant`` setting of the text table)."""
    settings = rules.settings if hasattr(rules, "settings") else {}
    value = settings.get("text", {}).get("indent_significant", ())
    return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()


def indent_matters(path: str, extra: Iterable[str] = ()) -> bool:
    name = PurePosixPath(path).name
    return any(
        fnmatch.fnmatchcase(name, g) or fnmatch.fnmatchcase(path, g) for g in (*INDENT_SIGNIFICANT, *extra)
    )


def matcher(rules: RuleSet | None) -> Callable[[str], bool]:
    globs = rules_globs(rules)
    return lambda path: indent_matters(path, globs)


def squash(data: bytes, indent: bool) -> bytes:
    """``data`` with the whitespace that carries no meaning removed: all of it, or only line ends."""
    if not indent:
        return b"".join(data.split())
    return b"\n".join(line.rstrip() for line in data.splitlines())
