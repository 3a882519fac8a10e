"""The gate's static checks: Python compiles, no stray ``import sglang``, no conflict markers left."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from sync.model.gate import FilePRs, GateFailure
from sync.textio import read_text

if TYPE_CHECKING:
    from sync.rules import Rule, RuleSet

_SGLANG_TOP = re.compile(r"^sglang(_\w+)?$")
_MARKER = re.compile(r"^(<{7}|>{7}|\|{7})(?: |$)")
_SEPARATOR = re.compile(r"^={7}$")


def check_compiles(
    worktree: Path, py_files: Iterable[str], file_prs: FilePRs
) -> tuple[list[GateFailure], dict[str, ast.Module]]:
    """Every Python file parses and compiles (Python 3.11); returns the trees of those that do."""
    failures, trees = [], {}
    for rel in py_files:
        source = (worktree / rel).read_bytes()
        try:
            trees[rel] = ast.parse(source, filename=rel)
            compile(source, rel, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as exc:
            trees.pop(rel, None)
            line = getattr(exc, "lineno", None)
            reason = getattr(exc, "msg", None) or str(exc)
            failures.append(
                GateFailure.about(
                    "compile",
                    f"{rel} does not compile: {reason} (line {line}); fix or delete the file",
                    [rel],
                    file_prs,
                    line=line,
                )
            )
    return failures, trees


def sglang_imports(tree: ast.Module) -> list[tuple[str, int]]:
    """``(module, line)`` for every absolute import of ``sglang`` / ``sglang_*`` in a module."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [
                (alias.name, node.lineno)
                for alias in node.names
                if _SGLANG_TOP.match(alias.name.split(".")[0])
            ]
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and _SGLANG_TOP.match(node.module.split(".")[0])
        ):
            found.append((node.module, node.lineno))
    return found


def keep_rule_for(rules: RuleSet, module: str, path: str) -> Rule | None:
    """The ``keep`` rule covering ``module`` imported in ``path``, or None."""
    for rule in rules.rules:
        if rule.status != "keep" or rule.kind not in ("module", "name"):
            continue
        if (module == rule.from_ or module.startswith(rule.from_ + ".")) and rule.applies_to(path):
            return rule
    return None


def check_sglang_imports(
    trees: dict[str, ast.Module], rules: RuleSet, file_prs: FilePRs
) -> list[GateFailure]:
    """No SGLang import survives translation unless a ``keep`` rule says it stays on purpose."""
    failures = []
    for rel, tree in sorted(trees.items()):
        for module, line in sglang_imports(tree):
            if keep_rule_for(rules, module, rel) is not None:
                continue
            failures.append(
                GateFailure.about(
                    "sglang-import",
                    f"{rel}:{line} imports {module} and no keep rule covers it; "
                    f"translate it to vLLM or add a keep rule to translations/modules.toml",
                    [rel],
                    file_prs,
                    line=line,
                )
            )
    return failures


def conflict_marker_lines(text: str) -> list[int]:
    """Line numbers (1-based) of conflict markers; ``=======`` counts only inside a ``<<<<<<<`` block."""
    lines, inside = [], False
    for number, line in enumerate(text.splitlines(), start=1):
        if _MARKER.match(line):
            inside = not line.startswith(">")
            lines.append(number)
        elif inside and _SEPARATOR.match(line):
            lines.append(number)
    return lines


def check_conflict_markers(worktree: Path, files: Iterable[str], file_prs: FilePRs) -> list[GateFailure]:
    failures = []
    for rel in files:
        text = read_text(worktree / rel)
        if text is None:
            continue
        marked = conflict_marker_lines(text)
        if marked:
            failures.append(
                GateFailure.about(
                    "conflict-marker",
                    f"{rel} still has {len(marked)} conflict-marker line(s) from line {marked[0]}; "
                    f"resolve them (vime-sync resolve) before merging",
                    [rel],
                    file_prs,
                    line=marked[0],
                )
            )
    return failures
