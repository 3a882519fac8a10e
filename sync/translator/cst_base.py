"""Shared machinery of the libcst passes: recording what a pass did, and where.

A pass records ``(original node, rule, applied|hit)`` events; the lines are resolved afterwards
and only for the statements that changed (libcst's PositionProvider over a whole module costs more
than the translation itself), see :func:`resolve_lines`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst._nodes.internal import CodegenState

from sync.rules import Rule
from sync.translator.compiled import CompiledRules


@dataclass
class Event:
    node: cst.CSTNode
    rule: Rule
    applied: bool  # False: a hit of a rule that leaves the code
    offset: int = 0  # extra lines inside the node (a multi-line string or comment)


@dataclass
class PassContext:
    """What every pass of one file needs to know."""

    rules: CompiledRules
    path: str  # upstream path
    dst_path: str | None
    bindings: dict[str, tuple[str | None, Rule | None]] = field(default_factory=dict)
    # every identifier-like word of the file: a rename onto one of them would merge two names
    taken: frozenset[str] = frozenset()


class RecordingTransformer(cst.CSTTransformer):
    """Base of every pass: collects events for provenance and review questions."""

    def __init__(self, context: PassContext) -> None:
        super().__init__()
        self.context = context
        self.rules = context.rules
        self.events: list[Event] = []

    def applied(self, node: cst.CSTNode, rule: Rule, offset: int = 0) -> None:
        self.events.append(Event(node, rule, True, offset))

    def hit(self, node: cst.CSTNode, rule: Rule, offset: int = 0) -> None:
        self.events.append(Event(node, rule, False, offset))


@dataclass
class _LineCodegenState(CodegenState):
    """Code generation that only counts lines and notes the line where each node starts."""

    line: int = 1
    starts: dict = field(default_factory=dict)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if "\n" in value:
            self.line += value.count("\n")

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.starts[node] = self.line


def line_map(module: cst.Module, statement: cst.CSTNode) -> dict[cst.CSTNode, int]:
    """1-based start line of every node of ``statement``, counted from its first (leading) line.

    libcst's PositionProvider computes full ranges for every node and costs several times more;
    a line per node is all provenance needs.
    """
    state = _LineCodegenState(default_indent=module.default_indent, default_newline=module.default_newline)
    statement._codegen(state)
    return state.starts
