"""After translation: which SGLang references are left, and which of them a rule covers.

An ``sglang`` left in the output is covered when it sits inside a kept reference (a link, a
third-party package name) or on a line where a rule that leaves code (``unsupported`` / ``keep``)
matched; every other one is *unmapped* and listed with file, line and snippet.
"""

from __future__ import annotations

import re
from functools import cache

from sync.rules import Rule
from sync.translator.compiled import SGLANG_REFERENCE, CompiledRules
from sync.translator.model import Hit, Ref
from sync.translator.py_compat import compat_scope

SNIPPET = 160


def snippet(line: str) -> str:
    return line.strip()[:SNIPPET]


@cache
def _scan_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def residual_hits(rules: CompiledRules, lines: list[str], path: str | None = None) -> list[Hit]:
    """Hits of leave-code rules that declare a ``scan`` regex (shapes left in place).

    In a plugin file (``path`` in the compat scope) SGLang's shapes are left on purpose, served by
    ``vime.compat``: the shape rules it replaces do not scan there.
    """
    scope = compat_scope(rules.rules)
    skipped = scope.replaced if path is not None and scope.covers(path) else frozenset()
    found: list[Hit] = []
    scanners: list[tuple[Rule, re.Pattern[str]]] = [
        (rule, _scan_regex(rule.extra["scan"]))
        for rule in rules.rules.rules
        if "scan" in rule.extra and rule.id not in skipped
    ]
    for rule, regex in scanners:
        for number, line in enumerate(lines, start=1):
            if regex.search(line):
                found.append(Hit(rule.id, number, snippet(line)))
    return found


def unmapped_references(
    rules: CompiledRules, path: str, lines: list[str], hits: list[Hit], skip_lines: set[int] | None = None
) -> list[Ref]:
    covered_lines = {hit.line for hit in hits}
    refs: list[Ref] = []
    for number, line in enumerate(lines, start=1):
        if number in covered_lines or (skip_lines and number in skip_lines):
            continue
        if not SGLANG_REFERENCE.search(line):
            continue
        kept = [m.span() for _, regex in rules.keep_references for m in regex.finditer(line)]
        for match in SGLANG_REFERENCE.finditer(line):
            if not any(start <= match.start() < end for start, end in kept):
                refs.append(Ref(path, number, snippet(line)))
                break
    return refs
