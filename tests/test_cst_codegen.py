"""sync/translator/cst_codegen.py drives libcst internals; here it must agree with libcst's public API
(so a libcst release that changes those internals fails this test, not a translation)."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from sync.translator.cst_codegen import line_map, render

SOURCE = '''import os


class Engine:
    """Doc."""

    def start(self, port: int) -> None:
        text = """two
lines"""
        if port:
            os.environ["P"] = str(port)  # comment
        return None
'''


def test_render_keeps_nested_indentation_and_multiline_strings():
    module = cst.parse_module(SOURCE)
    klass = module.body[1]
    method = klass.body.body[1]
    code = render(module, method, ["    "])
    assert code == "\n" + SOURCE[SOURCE.index("    def start") :]  # with its leading empty line
    assert render(module, klass, []) == module.code_for_node(klass)


def test_line_map_agrees_with_position_provider():
    wrapper = MetadataWrapper(cst.parse_module(SOURCE), unsafe_skip_copy=True)
    module = wrapper.module
    positions = wrapper.resolve(PositionProvider)
    klass = module.body[1]
    starts = line_map(module, klass)
    # line_map counts from the statement's first leading line (1); positions start at the keyword
    first = positions[klass].start.line - len(klass.leading_lines) - 1
    checked = 0
    for node, line in starts.items():
        if node in positions and isinstance(
            node, cst.BaseExpression | cst.BaseSmallStatement | cst.BaseCompoundStatement
        ):
            leading = len(getattr(node, "leading_lines", ()))  # a statement starts at its leading lines
            assert line + first + leading == positions[node].start.line, (type(node).__name__, line)
            checked += 1
    assert checked > 20
