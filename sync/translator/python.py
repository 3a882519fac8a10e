"""Python files: parse once with libcst, run the passes only over the statements that need them.

Each top-level statement whose code mentions a rule's token goes through the passes in a fixed
order (shapes, keyword arguments, strings and comments, names, imports); the others are kept
as they are. No pass adds or removes lines, so a line of the output is the same line upstream.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from sync.translator.compiled import CompiledRules
from sync.translator.cst_base import PassContext, RecordingTransformer, resolve_lines
from sync.translator.model import Applied, Hit
from sync.translator.py_imports import ImportPass, scan_bindings
from sync.translator.py_kwargs import KeywordPass
from sync.translator.py_names import NamePass
from sync.translator.py_shapes import ShapePass
from sync.translator.py_strings import StringRolePass
from sync.translator.scan import snippet

PassFactory = Callable[[PassContext], RecordingTransformer]


def _passes(rules: CompiledRules, code: str) -> list[PassFactory]:
    """The passes a statement needs, judged from its text (cheap; libcst visits are not)."""
    chosen: list[PassFactory] = []
    if "meta_info" in code or "output_token_logprobs" in code:
        chosen.append(ShapePass)
    if any(word in code for word in rules.kwargs):
        chosen.append(KeywordPass)
    chosen.append(StringRolePass)
    chosen.append(NamePass)
    if "import" in code:
        chosen.append(ImportPass)
    return chosen


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
    if not rules.trigger.search(text) and "slime" not in text:
        return text, [], []
    module = cst.parse_module(text)
    context = PassContext(
        rules=rules, path=path, dst_path=dst_path, bindings=scan_bindings(text, rules, path)
    )
    applied: list[Applied] = []
    raw_hits: list[tuple[str, int]] = []
    header = _comment_lines(module, rules, 1, module.header, applied, raw_hits)
    line = 1 + len(module.header)
    body = []
    for statement in module.body:
        code = module.code_for_node(statement)
        if rules.trigger.search(code) or "slime" in code:
            current = statement
            for factory in _passes(rules, code):
                transformer = factory(context)
                updated = current.visit(transformer)
                for event, relative in resolve_lines(module, current, transformer.events):
                    absolute = line + relative - 1
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
