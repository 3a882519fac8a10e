"""Descend into long statements with Python's own parser, and parse with libcst only what changes.

``narrow`` visits the children of a class or function one by one, but it needs the whole statement
parsed by libcst first: a 450-line class whose one method mentions SGLang costs a libcst parse of
450 lines. Here the descent uses the ``ast`` tree the translator already has (children, their
lines) and the tokenizer (where a header ends); only the innermost statements that a rule could
act on are parsed, each on its own inside a one-line wrapper (``class _:``) that keeps its
indentation. Every parsed piece must render back to exactly its source text, and every line is
either copied or produced from such a piece, so the output is the one a whole parse would give;
anything that does not line up raises ``Fallback`` and the caller parses the statement whole.
"""

from __future__ import annotations

import ast
import tokenize
from collections.abc import Callable, Hashable
from typing import Any

import libcst as cst

from sync.translator.cst_codegen import render
from sync.translator.memo import MEMO
from sync.translator.narrow import MIN_LINES, Narrower, one_block
from sync.translator.spans import first_code_line, group_ends, group_first_lines

Runner = Callable[[cst.BaseStatement, int, int], cst.BaseStatement]
_WRAPPER = "class _:\n"
_NOT_NARROWED = object()


class Fallback(Exception):
    """A piece did not line up with libcst's view of it: translate the statement the usual way."""


def header_end(source: list[str], node: ast.stmt) -> int | None:
    """Last line of the statement's header: where its first logical line ends (the tokenizer's
    NEWLINE; decorators are lines of their own, before ``node.lineno``)."""
    lines = iter(source[node.lineno - 1 :])
    try:
        for token in tokenize.generate_tokens(lambda: next(lines, "")):
            if token.type == tokenize.NEWLINE:
                return node.lineno + token.start[0] - 1
    except (tokenize.TokenError, SyntaxError):
        return None
    return None


class LazyNarrower:
    """The translation of one file's statements, parsing with libcst only the pieces that need it."""

    def __init__(
        self,
        source: list[str],
        trigger_lines: list[int],
        runner_for: Callable[[cst.Module], Runner],
        keys: Callable[[str], Hashable],
        out: Any,
    ) -> None:
        self.probe = Narrower(None, source, trigger_lines, None)  # type: ignore[arg-type]
        self.source = source
        self.runner_for = runner_for
        self.keys = keys
        self.out = out

    def statement(self, node: ast.stmt, start: int, first: int, end: int) -> str | None:
        """A top-level statement (lines ``start..end``, code from ``first``) narrowed lazily, or None
        when it cannot be (the caller parses it whole); raises ``Fallback`` on a misaligned piece."""
        if not one_block(node) or end - first < MIN_LINES or self.probe.has_trigger(start, first - 1):
            return None
        narrowed = self._narrowed(node, start, first, end)
        if narrowed is _NOT_NARROWED:
            return None
        return self.probe.text(start, end) if narrowed is None else narrowed  # type: ignore[return-value]

    def _piece(self, node: ast.stmt | None, first: int, last: int) -> str | None:
        """New text of a nested statement's lines ``first..last`` (leading lines included), or None."""
        if not self.probe.has_trigger(first, last):
            return None
        text = self.probe.text(first, last)
        return MEMO.through(
            (self.keys(text), "lazy"), text, first, self.out, lambda: self._compute(node, first, last)
        )

    def _compute(self, node: ast.stmt | None, first: int, last: int) -> str | None:
        """A nested statement narrowed by ``ast`` where it can be, else parsed alone."""
        new = self._narrowed(node, first, first_code_line(node), last) if node is not None else _NOT_NARROWED
        return self._leaf(first, last) if new is _NOT_NARROWED else new  # type: ignore[return-value]

    def _narrowed(self, node: ast.stmt, start: int, first: int, last: int) -> object:
        """Header and footer copied, children one by one; ``_NOT_NARROWED`` when it does not apply."""
        if not one_block(node) or last - first < MIN_LINES:
            return _NOT_NARROWED
        end_of_header = header_end(self.source, node)
        body = node.body  # type: ignore[attr-defined]
        groups, ends = group_first_lines(body), group_ends(body)
        if end_of_header is None or groups[0][0] <= end_of_header or ends[-1] > last:
            return _NOT_NARROWED
        if self.probe.has_trigger(ends[-1] + 1, last):
            return _NOT_NARROWED
        header, changed = self.probe.text(start, end_of_header), False
        if self.probe.has_trigger(start, end_of_header):  # e.g. ``class SGLangEngine(RayActor):``
            # a module-level statement (``statement`` saw no trigger in its leading lines) is parsed
            # from its code line; a nested one with its leading lines, inside the wrapper
            top = self.source[first - 1][:1] not in (" ", "\t")
            new_header = self._header(first if top else start, end_of_header, groups[0][0], wrapped=not top)
            if new_header is not None:
                header, changed = (self.probe.text(start, first - 1) if top else "") + new_header, True
        pieces = [header]
        previous = end_of_header
        for (_, child), child_end in zip(groups, ends, strict=True):
            new = self._piece(child, previous + 1, child_end)
            changed = changed or new is not None
            pieces.append(self.probe.text(previous + 1, child_end) if new is None else new)
            previous = child_end
        pieces.append(self.probe.text(previous + 1, last))
        return "".join(pieces) if changed else None

    def _header(self, first: int, last: int, body_line: int, *, wrapped: bool) -> str | None:
        """New text of a compound statement's header (lines ``first..last``), or None: the header
        parsed with ``pass`` for a body, which its rules never touch and which is cut off again."""
        line = self.source[body_line - 1]
        placeholder = line[: len(line) - len(line.lstrip(" \t"))] + "pass\n"
        text = self.probe.text(first, last)
        module, statement, indents = self._parse(text + placeholder, wrapped)
        new = self.runner_for(module)(statement, first, last)
        rendered = render(module, new, indents)
        if not rendered.endswith(placeholder):
            raise Fallback("the header's placeholder body changed")
        return None if new is statement else rendered[: -len(placeholder)]

    def _parse(self, text: str, wrapped: bool) -> tuple[cst.Module, cst.BaseStatement, list[str]]:
        """``text`` as one statement (inside ``class _:`` when ``wrapped``: it is indented), with the
        indentation it is rendered at; raises ``Fallback`` unless it renders back to ``text``."""
        try:
            module = cst.parse_module(_WRAPPER + text if wrapped else text)
        except cst.ParserSyntaxError as exc:
            raise Fallback(str(exc)) from exc
        if len(module.body) != 1 or module.header or module.footer:
            raise Fallback("the piece is not one statement")
        statement, indents = module.body[0], []
        if wrapped:
            block = statement.body if isinstance(statement, cst.ClassDef) else None
            if not isinstance(block, cst.IndentedBlock) or len(block.body) != 1 or block.footer:
                raise Fallback("the piece is not one statement")
            indents = [block.indent if block.indent is not None else module.default_indent]
            statement = block.body[0]
        if render(module, statement, indents) != text:
            raise Fallback("the piece does not render back to its text")
        return module, statement, indents

    def _leaf(self, first: int, last: int) -> str | None:
        """Parse lines ``first..last`` alone (inside ``class _:``) and run the passes on them."""
        module, statement, indents = self._parse(self.probe.text(first, last), wrapped=True)
        new = self.runner_for(module)(statement, first, last)
        return None if new is statement else render(module, new, indents)
