"""Visit as little as possible: descend into classes, functions and one-block compound statements
(``for``, ``while``, ``with``, ``if`` without ``else``), down to the statements that mention something
a rule acts on, and copy every other line from the source text.

A libcst visit of a 600-line class to rename one import costs far more than the rename; with
statement spans from Python's own parser (see ``spans``) the passes run on the smallest
statements that need them, and only those statements are generated again (at their indentation).
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Callable, Hashable
from typing import Any

import libcst as cst

from sync.translator.cst_codegen import render
from sync.translator.memo import MEMO
from sync.translator.spans import group_first_lines

MIN_LINES = 8  # smaller statements are visited whole

# Statements whose one indented block can be transformed child by child: definitions, and the
# compound statements that have no second clause (``else``/``elif``/``except``/``finally``), whose
# geometry is the same (header lines, then the block, then the block's footer).
_ONE_BLOCK = {
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef),
    cst.ClassDef: (ast.ClassDef,),
    cst.For: (ast.For, ast.AsyncFor),
    cst.While: (ast.While,),
    cst.With: (ast.With, ast.AsyncWith),
    cst.If: (ast.If,),
}


_ONE_BLOCK_AST = tuple(kind for kinds in _ONE_BLOCK.values() for kind in kinds)


def one_block(node: ast.AST | None) -> bool:
    """Whether the ``ast`` statement ``node`` is one header and one indented block."""
    return isinstance(node, _ONE_BLOCK_AST) and not getattr(node, "orelse", None)


def _one_block(statement: cst.BaseStatement, node: ast.AST | None) -> bool:
    """Whether ``statement`` (with its ``ast`` twin ``node``) is one header and one indented block."""
    kinds = _ONE_BLOCK.get(type(statement))
    return (
        kinds is not None
        and isinstance(node, kinds)
        and one_block(node)
        and isinstance(statement.body, cst.IndentedBlock)
        and getattr(statement, "orelse", None) is None
    )


Runner = Callable[[cst.BaseStatement, int, int], cst.BaseStatement]


class Narrower:
    def __init__(
        self,
        module: cst.Module,
        source: list[str],
        trigger_lines: list[int],
        run: Runner,
        *,
        keys: Callable[[str], Hashable] | None = None,
        out: Any = None,
    ) -> None:
        """``keys`` (a statement's text → its memo key) and ``out`` (where ``run`` records events,
        with ``applied`` and ``hits`` lists): nested statements are then remembered in ``memo.MEMO``."""
        self.module = module
        self.source = source
        self.trigger_lines = trigger_lines
        self.run = run
        self.keys = keys
        self.out = out

    def has_trigger(self, first: int, last: int) -> bool:
        index = bisect.bisect_left(self.trigger_lines, first)
        return index < len(self.trigger_lines) and self.trigger_lines[index] <= last

    def text(self, first: int, last: int) -> str:
        return "".join(self.source[first - 1 : last])

    def transform(
        self, statement: cst.BaseStatement, node: ast.AST | None, first: int, last: int, indents: list[str]
    ) -> str | None:
        """The new text of lines ``first..last`` (this statement), or None when nothing changed."""
        if not self.has_trigger(first, last):
            return None
        if self.keys is None or not indents:  # top-level statements are remembered by the caller
            return self._transform(statement, node, first, last, indents)
        module, text = self.module, self.text(first, last)
        key = (self.keys(text), tuple(indents), module.default_indent, module.default_newline)
        return MEMO.through(
            key, text, first, self.out, lambda: self._transform(statement, node, first, last, indents)
        )

    def _transform(
        self, statement: cst.BaseStatement, node: ast.AST | None, first: int, last: int, indents: list[str]
    ) -> str | None:
        narrowed = self._narrow(statement, node, first, last, indents)
        if narrowed is not False:
            return narrowed
        new = self.run(statement, first, last)
        return None if new is statement else render(self.module, new, indents)

    def _narrow(self, statement, node, first: int, last: int, indents: list[str]) -> str | bool | None:
        """Transform the children one by one; False when this statement must be visited whole."""
        if last - first < MIN_LINES or not _one_block(statement, node):
            return False
        block = statement.body
        groups = group_first_lines(node.body)
        if len(groups) != len(block.body):
            return False
        starts = [
            line - len(child.leading_lines) for (line, _), child in zip(groups, block.body, strict=True)
        ]
        body_last = last - len(block.footer)
        ends = [start - 1 for start in starts[1:]] + [body_last]
        if starts[0] <= first or any(end < start for start, end in zip(starts, ends, strict=True)):
            return False
        if self.has_trigger(first, starts[0] - 1) or self.has_trigger(body_last + 1, last):
            return False  # the header (decorators, signature) or the block's trailing comments
        inner = [*indents, block.indent if block.indent is not None else self.module.default_indent]
        pieces, changed = [self.text(first, starts[0] - 1)], False
        for child, (_, child_node), start, end in zip(block.body, groups, starts, ends, strict=True):
            new = self.transform(child, child_node, start, end, inner)
            changed = changed or new is not None
            pieces.append(self.text(start, end) if new is None else new)
        pieces.append(self.text(body_last + 1, last))
        return "".join(pieces) if changed else None
