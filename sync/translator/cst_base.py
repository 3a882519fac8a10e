"""Shared machinery of the libcst passes: recording what a pass did, and where.

A pass records ``(original node, rule, applied|hit)`` events; the lines are resolved afterwards
and only for the statements that changed (libcst's PositionProvider over a whole module costs more
than the translation itself), with :func:`sync.translator.cst_codegen.line_map`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

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
