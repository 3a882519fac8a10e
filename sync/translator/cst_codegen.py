"""The one module that uses libcst internals: code generation of a single node, in two forms.

libcst's public API generates code for a whole module, or for a node at no indentation
(``Module.code_for_node``), and gives positions through ``PositionProvider``, which computes
full ranges for every node of the module. The translator needs (1) a nested statement's code at
its own indentation and (2) the start line of each node of one statement. Both drive libcst's
``CodegenState`` (``libcst._nodes.internal``) and ``CSTNode._codegen`` directly; pyproject.toml
bounds libcst to the minor versions this was checked on, and tests/test_cst_codegen.py compares
both against the public API, so a libcst change that breaks them fails there first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst._nodes.internal import CodegenState


def render(module: cst.Module, node: cst.CSTNode, indents: list[str]) -> str:
    """Code of a (possibly nested) statement at its own indentation (``indents``: one per level)."""
    state = CodegenState(default_indent=module.default_indent, default_newline=module.default_newline)
    state.indent_tokens = list(indents)
    node._codegen(state)
    return "".join(state.tokens)


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

    A line per node is all provenance needs; PositionProvider's full ranges for the whole module
    cost more than the translation itself (benchmarks/bench_translate.py, docs/benchmarks.md).
    """
    state = _LineCodegenState(default_indent=module.default_indent, default_newline=module.default_newline)
    statement._codegen(state)
    return state.starts


@dataclass
class _RangeCodegenState(_LineCodegenState):
    """Also notes the line where each node's code ends."""

    ends: dict = field(default_factory=dict)

    def after_codegen(self, node: cst.CSTNode) -> None:
        self.ends[node] = self.line


def line_ranges(module: cst.Module) -> tuple[dict[cst.CSTNode, int], dict[cst.CSTNode, int]]:
    """First and last line (1-based) of every node of ``module``: the lines of libcst's
    ``PositionProvider`` for expressions, from one code generation that only counts lines (the
    provider's column bookkeeping costs about eight times as much)."""
    state = _RangeCodegenState(default_indent=module.default_indent, default_newline=module.default_newline)
    module._codegen(state)
    return state.starts, state.ends
