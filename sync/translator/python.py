"""Python files: parse once with libcst, run the passes only over the statements that need them.

Each top-level statement whose code mentions a rule's token goes through the passes in a fixed
order (shapes, keyword arguments, strings and comments, names, imports); the others are kept
as they are. No pass adds or removes lines, so a line of the output is the same line upstream.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import libcst as cst

from sync.translator.compiled import SGLANG_REFERENCE, CompiledRules
from sync.translator.cst_base import PassContext, RecordingTransformer, line_map
from sync.translator.model import Applied, Hit
from sync.translator.py_imports import ImportPass, scan_bindings
from sync.translator.py_kwargs import KeywordPass
from sync.translator.py_names import NamePass
from sync.translator.py_shapes import ShapePass
from sync.translator.py_strings import StringRolePass
from sync.translator.scan import snippet

PassFactory = Callable[[PassContext], RecordingTransformer]


def _passes(rules: CompiledRules, code: str, renamed: re.Pattern[str] | None) -> list[PassFactory]:
    """The passes a statement needs, judged from its text (cheap; libcst visits are not)."""
    chosen: list[PassFactory] = []
    if rules.shape_trigger.search(code):
        chosen.append(ShapePass)
    if rules.kwarg_trigger is not None and rules.kwarg_trigger.search(code):
        chosen.append(KeywordPass)
    if rules.string_trigger.search(code):
        chosen.append(StringRolePass)
    if SGLANG_REFERENCE.search(code) or (renamed is not None and renamed.search(code)):
        chosen.append(NamePass)
    if rules.import_trigger.search(code) and rules.module_roots.search(code):
        chosen.append(ImportPass)
    return chosen


def _renamed_bindings(context: PassContext) -> re.Pattern[str] | None:
    """Names whose import changes them (``ServerArgs`` → ``EngineArgs``): uses must follow."""
    names = [old for old, (new, _rule) in context.bindings.items() if new is not None and new != old]
    return re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b") if names else None


class _Lines:
    """Lines of events inside one top-level statement, computed lazily and at most once per tree."""

    def __init__(self, module: cst.Module, start: int) -> None:
        self.module = module
        self.start = start
        self.maps: list[dict] = []

    def line_of(self, event, tree: cst.CSTNode) -> int:
        for starts in self.maps:
            relative = starts.get(event.node)
            if relative is not None:
                return self.start + relative - 1 + event.offset
        starts = line_map(self.module, tree)
        self.maps.append(starts)
        relative = starts.get(event.node, 1)
        return self.start + relative - 1 + event.offset


def _comment_lines(module: cst.Module, rules: CompiledRules, start: int, nodes, out_applied, out_hits):
    """Prose rules on the module's header/footer comments (outside any statement)."""
    new_nodes = []
    for index, empty in enumerate(nodes):
        if empty.comment is None:
            new_nodes.append(empty)
            continue
        text, applied, hits = rules.rewrite_text(empty.comment.value, "prose")
        out_applied.extend(Applied(rule_id, start + index) for rule_id, _ in applied)
        out_hits.extend((rule_id, start + index) for rule_id, _ in hits)
        new_nodes.append(
            empty.with_changes(comment=empty.comment.with_changes(value=text)) if applied else empty
        )
    return new_nodes


def translate_python(
    text: str, path: str, dst_path: str | None, rules: CompiledRules
) -> tuple[str, list[Applied], list[Hit]]:
    """Translate one module's source. Raises ``libcst.ParserSyntaxError`` when it does not parse."""
    if not rules.trigger.search(text):
        return text, [], []
    module = cst.parse_module(text)
    context = PassContext(
        rules=rules, path=path, dst_path=dst_path, bindings=scan_bindings(text, rules, path)
    )
    renamed = _renamed_bindings(context)
    applied: list[Applied] = []
    raw_hits: list[tuple[str, int]] = []
    header = _comment_lines(module, rules, 1, module.header, applied, raw_hits)
    line = 1 + len(module.header)
    body = []
    for statement in module.body:
        code = module.code_for_node(statement)
        factories = _passes(rules, code, renamed) if rules.trigger.search(code) or renamed else []
        if factories:
            current = statement
            lines = _Lines(module, line)
            for factory in factories:
                transformer = factory(context)
                updated = current.visit(transformer)
                for event in transformer.events:
                    absolute = lines.line_of(event, current)
                    if event.applied:
                        applied.append(Applied(event.rule.id, absolute))
                    else:
                        raw_hits.append((event.rule.id, absolute))
                current = updated
            statement = current
        body.append(statement)
        line += code.count("\n")
    footer = _comment_lines(module, rules, line, module.footer, applied, raw_hits)
    new_module = module.with_changes(header=header, body=body, footer=footer)
    new_text = new_module.code if (applied or raw_hits) else text
    lines = new_text.split("\n")
    hits = [
        Hit(rule_id, number, snippet(lines[number - 1]) if number <= len(lines) else "")
        for rule_id, number in raw_hits
    ]
    return new_text, sorted(set(applied)), sorted(set(hits))
