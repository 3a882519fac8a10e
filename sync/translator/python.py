"""Python files: parse once with libcst, run the passes only over the statements that need them.

Each top-level statement whose code mentions a rule's token goes through the passes in a fixed
order (shapes, keyword arguments, strings and comments, names, imports); the others are kept
as they are. No pass adds or removes lines, so a line of the output is the same line upstream.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

import libcst as cst

from sync.translator.compiled import SGLANG_REFERENCE, CompiledRules
from sync.translator.cst_base import PassContext, RecordingTransformer, line_map
from sync.translator.model import Applied, Hit
from sync.translator.narrow import Narrower
from sync.translator.py_imports import ImportPass, imports_from_ast, imports_from_text, scan_bindings
from sync.translator.py_kwargs import KeywordPass
from sync.translator.py_names import NamePass
from sync.translator.py_shapes import ShapePass
from sync.translator.py_strings import StringRolePass
from sync.translator.scan import snippet
from sync.translator.spans import group_first_lines, parse_ast, spans_by_codegen, split_lines, statement_spans

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


def _trigger_lines(text: str, rules: CompiledRules, renamed: re.Pattern[str] | None) -> list[int]:
    """Sorted line numbers where any rule could act."""
    starts = [0] + [match.end() for match in re.finditer(r"\r\n|\r|\n", text)]
    lines = set()
    for regex in (rules.trigger, renamed):
        if regex is not None:
            lines.update(bisect.bisect_right(starts, match.start()) for match in regex.finditer(text))
    return sorted(lines)


def _renamed_bindings(context: PassContext) -> re.Pattern[str] | None:
    """Names whose import changes them (``ServerArgs`` → ``EngineArgs``): uses must follow; and
    names imported from modules that stay SGLang: their uses are reported with the import."""
    names = [
        old
        for old, (new, rule) in context.bindings.items()
        if (new is not None and new != old) or (rule is not None and rule.leaves_code)
    ]
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


def _comment_lines(
    rules: CompiledRules, lines: list[str], first: int, applied: list[Applied], hits: list[tuple[str, int]]
) -> list[str]:
    """Prose rules on the module's header/footer comment lines (outside any statement)."""
    out = []
    for offset, line in enumerate(lines):
        if not line.lstrip().startswith("#"):
            out.append(line)
            continue
        new, line_applied, line_hits = rules.rewrite_text(line, "prose")
        applied.extend(Applied(rule_id, first + offset) for rule_id, _ in line_applied)
        hits.extend((rule_id, first + offset) for rule_id, _ in line_hits)
        out.append(new)
    return out


def _run_passes(
    module: cst.Module,
    statement: cst.BaseStatement,
    factories: list[PassFactory],
    context: PassContext,
    start: int,
    applied: list[Applied],
    hits: list[tuple[str, int]],
) -> cst.BaseStatement:
    current = statement
    lines = _Lines(module, start)
    for factory in factories:
        transformer = factory(context)
        updated = current.visit(transformer)
        for event in transformer.events:
            absolute = lines.line_of(event, current)
            if event.applied:
                applied.append(Applied(event.rule.id, absolute))
            else:
                hits.append((event.rule.id, absolute))
        current = updated
    return current


def translate_python(
    text: str, path: str, dst_path: str | None, rules: CompiledRules
) -> tuple[str, list[Applied], list[Hit]]:
    """Translate one module's source. Raises ``libcst.ParserSyntaxError`` when it does not parse.

    Unchanged statements are copied from the source text; only changed ones are generated.
    """
    if not rules.trigger.search(text):
        return text, [], []
    module = cst.parse_module(text)
    tree = parse_ast(text)
    statements = imports_from_ast(tree) if tree is not None else imports_from_text(text)
    context = PassContext(
        rules=rules, path=path, dst_path=dst_path, bindings=scan_bindings(statements, rules, path)
    )
    renamed = _renamed_bindings(context)
    source = split_lines(text)
    spans = statement_spans(module, tree, source)
    nodes = (
        [node for _, node in group_first_lines(tree.body)] if spans is not None else [None] * len(module.body)
    )
    spans = spans or spans_by_codegen(module)
    applied: list[Applied] = []
    raw_hits: list[tuple[str, int]] = []
    pieces = _comment_lines(rules, source[: len(module.header)], 1, applied, raw_hits)

    def run(statement: cst.BaseStatement, first: int, last: int) -> cst.BaseStatement:
        factories = _passes(rules, "".join(source[first - 1 : last]), renamed)
        if not factories:
            return statement
        return _run_passes(module, statement, factories, context, first, applied, raw_hits)

    narrower = Narrower(module, source, _trigger_lines(text, rules, renamed), run)
    for statement, node, (start, end) in zip(module.body, nodes, spans, strict=True):
        new = narrower.transform(statement, node, start, end, [])
        pieces.append(narrower.text(start, end) if new is None else new)
    last = spans[-1][1] if spans else len(module.header)
    pieces.extend(_comment_lines(rules, source[last:], last + 1, applied, raw_hits))
    new_text = "".join(pieces) if (applied or raw_hits) else text
    if new_text != text and not text.endswith(("\n", "\r")) and new_text.endswith(("\n", "\r")):
        new_text = new_text.rstrip("\r\n") if text.rstrip("\r\n") == text else new_text
    lines = new_text.split("\n")
    hits = [
        Hit(rule_id, number, snippet(lines[number - 1]) if number <= len(lines) else "")
        for rule_id, number in raw_hits
    ]
    return new_text, sorted(set(applied)), sorted(set(hits))
