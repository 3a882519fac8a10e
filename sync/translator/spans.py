"""Line spans of a module's top-level statements, without asking libcst to generate code.

libcst has no positions without a code-generation pass, and generating every statement costs
more than the whole translation. The spans come instead from Python's own (C) parser: the i-th
libcst statement starts ``len(leading_lines)`` lines before the first code line ``ast`` reports
for it, and ends where the next one starts. Anything that does not line up returns None and the
caller falls back to libcst's code generation.
"""

from __future__ import annotations

import ast
import functools
import re

import libcst as cst

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")

Span = tuple[int, int]  # first and last line, 1-based, inclusive


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split the way Python's tokenizer counts them."""
    return _LINE.findall(text)


def first_code_line(node: ast.stmt) -> int:
    """A statement's first line of code: its first decorator's, if it has any."""
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])


def group_first_lines(body: list[ast.stmt]) -> list[tuple[int, ast.stmt | None]]:
    """First code line of each libcst-sized group of ``ast`` statements, with the statement itself
    (None for a `a = 1; b = 2` line, which libcst keeps as one statement and ast splits)."""
    groups: list[tuple[int, ast.stmt | None]] = []
    previous_end = 0
    for node in body:
        first = first_code_line(node)
        if groups and first == previous_end:
            groups[-1] = (groups[-1][0], None)
        else:
            groups.append((first, node))
        previous_end = node.end_lineno or first
    return groups


def group_ends(body: list[ast.stmt]) -> list[int]:
    """Last line of each libcst-sized group of ``ast`` statements (see ``group_first_lines``)."""
    ends: list[int] = []
    previous_end = 0
    for node in body:
        first = first_code_line(node)
        end = node.end_lineno or first
        if ends and first == previous_end:
            ends[-1] = end
        else:
            ends.append(end)
        previous_end = end
    return ends


@functools.lru_cache(maxsize=4)
def parse_ast(text: str) -> ast.Module | None:
    """Python's own parse of ``text``, or None. Cached: the translator parses the upstream text and
    the conformance stage the translated one, which is the same text for most files (callers only
    read the tree)."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def statement_spans(module: cst.Module, tree: ast.Module | None, lines: list[str]) -> list[Span] | None:
    if tree is None:
        return None
    if not module.body:
        return []
    groups = group_first_lines(tree.body)
    if len(groups) != len(module.body):
        return None
    starts = [
        first - len(statement.leading_lines)
        for (first, _), statement in zip(groups, module.body, strict=True)
    ]
    ends = [start - 1 for start in starts[1:]] + [len(lines) - len(module.footer)]
    spans = list(zip(starts, ends, strict=True))
    expected_start = len(module.header) + 1
    for start, end in spans:
        if start != expected_start or end < start:
            return None
        expected_start = end + 1
    return spans


def spans_by_codegen(module: cst.Module) -> list[Span]:
    """The slow, always-right way: generate each statement's code and count its lines."""
    spans, line = [], len(module.header) + 1
    for statement in module.body:
        count = module.code_for_node(statement).count("\n")
        spans.append((line, line + count - 1))
        line += count
    return spans
