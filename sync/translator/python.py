"""Python files: parse once with libcst, run the passes only over the statements that need them.

Each top-level statement whose code mentions a rule's token goes through the passes in a fixed
order (shapes, keyword arguments, strings and comments, names, imports); the others are kept
as they are. No pass adds or removes lines, so a line of the output is the same line upstream.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Callable

import libcst as cst

from sync.translator.compiled import SGLANG_REFERENCE, CompiledRules
from sync.translator.cst_base import PassContext, RecordingTransformer
from sync.translator.cst_codegen import line_map, render
from sync.translator.lazy import Fallback, LazyNarrower
from sync.translator.memo import MEMO
from sync.translator.model import Applied, Hit
from sync.translator.narrow import Narrower
from sync.translator.py_compat import CompatPass, compat_scope
from sync.translator.py_imports import ImportPass, imports_from_ast, imports_from_text, scan_bindings
from sync.translator.py_kwargs import KeywordPass
from sync.translator.py_names import NamePass
from sync.translator.py_scopes import import_uses, needs_scopes
from sync.translator.py_shapes import ShapePass
from sync.translator.py_strings import StringRolePass
from sync.translator.scan import snippet
from sync.translator.spans import (
    group_ends,
    group_first_lines,
    parse_ast,
    spans_by_codegen,
    split_lines,
    statement_spans,
)

PassFactory = Callable[[PassContext], RecordingTransformer]


def _passes(
    rules: CompiledRules, code: str, renamed: re.Pattern[str] | None, plugin: bool = False
) -> list[PassFactory]:
    """The passes a statement needs, judged from its text (cheap; libcst visits are not).

    In a plugin file (``plugin``) SGLang's request/response shapes stay: its ``post`` import is
    pointed at ``vime.compat`` instead (``py_compat``), before the import rules see it.
    """
    chosen: list[PassFactory] = []
    if plugin:
        if "http_utils" in code and rules.import_trigger.search(code):
            chosen.append(CompatPass)
    elif rules.shape_trigger.search(code):
        chosen.append(ShapePass)
    if rules.kwarg_trigger is not None and rules.kwarg_trigger.search(code):
        chosen.append(KeywordPass)
    if _has_string_or_comment(code) and rules.string_trigger.search(code):
        chosen.append(StringRolePass)
    if SGLANG_REFERENCE.search(code) or (renamed is not None and renamed.search(code)):
        chosen.append(NamePass)
    if rules.import_trigger.search(code) and rules.module_roots.search(code):
        chosen.append(ImportPass)
    return chosen


def _has_string_or_comment(code: str) -> bool:
    """Whether the code could hold a literal or a comment: the string pass acts on nothing else (a
    ``slime.x`` import matches its trigger, but the import pass owns it)."""
    return '"' in code or "'" in code or "#" in code


def _trigger_lines(text: str, rules: CompiledRules, renamed: re.Pattern[str] | None) -> list[int]:
    """Sorted line numbers where any rule could act."""
    starts = [0] + [match.end() for match in re.finditer(r"\r\n|\r|\n", text)]
    lines = set()
    for regex in (rules.trigger, renamed):
        if regex is not None:
            lines.update(bisect.bisect_right(starts, match.start()) for match in regex.finditer(text))
    return sorted(lines)


def _bound_names(context: PassContext) -> frozenset[str]:
    """Names whose import changes them (``ServerArgs`` → ``EngineArgs``): uses must follow; and
    names imported from modules that stay SGLang: their uses are reported with the import."""
    return frozenset(
        old
        for old, (new, rule) in context.bindings.items()
        if (new is not None and new != old) or (rule is not None and rule.leaves_code)
    )


def _renamed_bindings(names: frozenset[str]) -> re.Pattern[str] | None:
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
    scoped: frozenset[str] = frozenset(),
) -> cst.BaseStatement:
    """``scoped``: the bound names whose uses in this (top-level) statement are told from other
    spellings by scope analysis (``py_scopes``)."""
    current = statement
    lines = _Lines(module, start)
    for factory in factories:
        if factory is NamePass and scoped:
            transformer = NamePass(context, scoped, import_uses(current, scoped))
        else:
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


class _Collector:
    """Provenance and hits of one file, as the passes report them."""

    def __init__(self) -> None:
        self.applied: list[Applied] = []
        self.hits: list[tuple[str, int]] = []


def _runner(
    module: cst.Module, rules, source, renamed, context: PassContext, out: _Collector, scoped=frozenset()
):
    plugin = compat_scope(rules.rules).covers(context.path)

    def run(statement: cst.BaseStatement, first: int, last: int) -> cst.BaseStatement:
        factories = _passes(rules, "".join(source[first - 1 : last]), renamed, plugin)
        if not factories:
            return statement
        return _run_passes(module, statement, factories, context, first, out.applied, out.hits, scoped)

    return run


def _scoped_names(node: ast.AST | None, text: str, names: frozenset[str], renamed) -> frozenset[str]:
    """The bound names this top-level statement spells in a way that may not be the import
    (``py_scopes.needs_scopes``): such a statement is visited whole, with scope analysis."""
    if renamed is None or not renamed.search(text):
        return frozenset()
    return names if needs_scopes(node, names) else frozenset()


def _whole_with_scopes(module, statement, first: int, end: int, runner_args, scoped) -> str | None:
    """The new text of a top-level statement visited whole with scope analysis, or None."""
    rules, source, renamed, context, out = runner_args
    new = _runner(module, rules, source, renamed, context, out, scoped)(statement, first, end)
    return None if new is statement else render(module, new, [])


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _StatementKeys:
    """Memo keys (``memo``) of one file's statements: the text, and what of the file it depends on.

    A statement's translation depends on the file's path, the rule tables, the bindings of the
    names it mentions (``NamePass``; ``renamed`` is made of them) and the file's rename collisions;
    not on bindings of names it does not mention, so an import added elsewhere in the file keeps
    the other statements' entries.
    """

    def __init__(self, context: PassContext) -> None:
        self.bindings = {
            name: (new, rule.id if rule is not None else None)
            for name, (new, rule) in context.bindings.items()
        }
        self.static = (context.rules.rules.hash, context.path, context.dst_path, _collisions(context))

    def __call__(self, text: str) -> tuple:
        mentioned = set(_WORD.findall(text)).intersection(self.bindings)
        return (self.static, tuple(sorted((name, self.bindings[name]) for name in mentioned)), text)


def _collisions(context: PassContext) -> tuple[str, ...]:
    """The file's names whose rename would land on another name of the file (``NamePass`` leaves
    those): the only part of ``context.taken`` a statement's translation depends on."""
    rules, taken = context.rules, context.taken
    found = []
    for word in taken:
        if word in rules.exact_names or word.startswith("sglang_") or SGLANG_REFERENCE.search(word):
            new, rule = rules.rename_identifier(word)
            if rule is not None and new != word and new in taken:
                found.append(word)
    return tuple(sorted(found))


def _lazily(lazy: LazyNarrower | None, node, start: int, first: int, end: int, out) -> list[str] | None:
    """The statement through ``lazy`` (no libcst parse of it whole), or None: parse it the usual way."""
    if lazy is None:
        return None
    applied_before, hits_before = len(out.applied), len(out.hits)
    try:
        new = lazy.statement(node, start, first, end)
    except Fallback:
        new = None
    if new is None:
        del out.applied[applied_before:], out.hits[hits_before:]
        return None
    return [new]


def _by_slices(tree: ast.Module, source: list[str], triggers: list[int], rules, renamed, context, out):
    """Parse with libcst only the top-level statements that need it; None if a slice does not line up.

    Each top-level statement with the comment and blank lines before it is a module on its own, so
    a file whose only change is one import costs a parse of that import, not of the file.
    """
    pieces: list[str] = []
    previous_end = 0
    keys = _StatementKeys(context)
    names = _bound_names(context)
    lazy = None
    if not any("\r" in line for line in source):  # the wrapper parse writes "\n" line ends
        runner_for = lambda module: _runner(module, rules, source, renamed, context, out)  # noqa: E731
        lazy = LazyNarrower(source, triggers, runner_for, keys, out)
    for (first, node), end in zip(group_first_lines(tree.body), group_ends(tree.body), strict=True):
        start = previous_end + 1
        previous_end = end
        probe = Narrower(None, source, triggers, None)  # type: ignore[arg-type]
        if not probe.has_trigger(start, end):
            pieces.append(probe.text(start, end))
            continue
        key = keys(probe.text(start, end))
        found = MEMO.get(key)
        if found is not None:  # the same statement in another version of this file
            pieces.extend(MEMO.replay(found, start, out.applied, out.hits))  # type: ignore[arg-type]
            continue
        applied_before, hits_before = len(out.applied), len(out.hits)
        scoped = _scoped_names(node, key[-1], names, renamed)
        piece = None if scoped else _lazily(lazy, node, start, first, end, out)
        if piece is not None:
            MEMO.put(
                key, tuple(piece), out.applied[applied_before:], out.hits[hits_before:], start, len(key[-1])
            )
            pieces.extend(piece)
            continue
        sub = cst.parse_module(probe.text(start, end))
        if len(sub.body) != 1 or sub.footer:
            return None
        statement = sub.body[0]
        statement_start = first - len(statement.leading_lines)
        if statement_start - start != len(sub.header):
            return None
        piece = _comment_lines(rules, source[start - 1 : statement_start - 1], start, out.applied, out.hits)
        if scoped:
            runner_args = (rules, source, renamed, context, out)
            new = _whole_with_scopes(sub, statement, statement_start, end, runner_args, scoped)
        else:
            runner = _runner(sub, rules, source, renamed, context, out)
            new = Narrower(sub, source, triggers, runner, keys=keys, out=out).transform(
                statement, node, statement_start, end, []
            )
        piece.append(probe.text(statement_start, end) if new is None else new)
        size = len(key[-1]) + sum(map(len, piece))
        MEMO.put(key, tuple(piece), out.applied[applied_before:], out.hits[hits_before:], start, size)
        pieces.extend(piece)
    pieces.extend(_comment_lines(rules, source[previous_end:], previous_end + 1, out.applied, out.hits))
    return pieces


def _whole_module(text: str, tree, source: list[str], triggers: list[int], rules, renamed, context, out):
    """One libcst parse of the whole file (when Python's own parser cannot give the slices)."""
    module = cst.parse_module(text)
    spans = statement_spans(module, tree, source)
    nodes = (
        [node for _, node in group_first_lines(tree.body)] if spans is not None else [None] * len(module.body)
    )
    spans = spans or spans_by_codegen(module)
    pieces = _comment_lines(rules, source[: len(module.header)], 1, out.applied, out.hits)
    narrower = Narrower(module, source, triggers, _runner(module, rules, source, renamed, context, out))
    names = _bound_names(context)
    for statement, node, (start, end) in zip(module.body, nodes, spans, strict=True):
        scoped = _scoped_names(node, narrower.text(start, end), names, renamed)
        if scoped and narrower.has_trigger(start, end):
            runner_args = (rules, source, renamed, context, out)
            new = _whole_with_scopes(module, statement, start, end, runner_args, scoped)
        else:
            new = narrower.transform(statement, node, start, end, [])
        pieces.append(narrower.text(start, end) if new is None else new)
    last = spans[-1][1] if spans else len(module.header)
    pieces.extend(_comment_lines(rules, source[last:], last + 1, out.applied, out.hits))
    return pieces


def translate_python(
    text: str, path: str, dst_path: str | None, rules: CompiledRules
) -> tuple[str, list[Applied], list[Hit]]:
    """Translate one module's source. Raises ``libcst.ParserSyntaxError`` when it does not parse.

    Unchanged statements are copied from the source text; only changed ones are generated.
    """
    if not rules.trigger.search(text):
        return text, [], []
    tree = parse_ast(text)
    statements = imports_from_ast(tree) if tree is not None else imports_from_text(text)
    context = PassContext(
        rules=rules, path=path, dst_path=dst_path, bindings=scan_bindings(statements, rules, path),
        taken=frozenset(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)),
    )  # fmt: skip
    renamed = _renamed_bindings(_bound_names(context))
    source = split_lines(text)
    triggers = _trigger_lines(text, rules, renamed)
    out = _Collector()
    pieces = _by_slices(tree, source, triggers, rules, renamed, context, out) if tree is not None else None
    if pieces is None:
        out = _Collector()
        pieces = _whole_module(text, tree, source, triggers, rules, renamed, context, out)
    scope = compat_scope(rules.rules)
    if scope.covers(path):  # SGLang's request/response idiom is served there by vime.compat
        out.hits = [(rule_id, line) for rule_id, line in out.hits if rule_id not in scope.replaced]
    new_text = "".join(pieces) if (out.applied or out.hits) else text
    if new_text != text and not text.endswith(("\n", "\r")) and new_text.endswith(("\n", "\r")):
        new_text = new_text.rstrip("\r\n") if text.rstrip("\r\n") == text else new_text
    lines = new_text.split("\n")
    hits = [
        Hit(rule_id, number, snippet(lines[number - 1]) if number <= len(lines) else "")
        for rule_id, number in out.hits
    ]
    return new_text, sorted(set(out.applied)), sorted(set(hits))
