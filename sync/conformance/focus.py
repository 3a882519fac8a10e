"""Cut a module down to the functions that can hold an HTTP call, before the libcst extraction.

Why: the extraction visits the module with libcst position metadata, about half a second for a
large file, while the calls it looks for sit in a few functions. ``focus`` finds the top-level
functions and classes (and the methods of classes) with Python's own parser, which costs
milliseconds, and blanks those that cannot hold a call the extraction would record: one whose
first argument is a URL-like string, a URL built with ``+``, or a name some assignment in the module
binds to a URL (the only URLs the extraction can know), a declared wrapper's call, or a router
policy comparison. The extraction parses what is left (a method left out leaves ``pass``) and maps
each line back to the original. The rest of the module (imports, constants, other statements) is
kept whole: it binds names the calls use.
"""

from __future__ import annotations

import ast
import re

from sync.translator.spans import first_code_line, parse_ast

VERB_CALL = re.compile(r"\.(get|post|put|delete|patch)\s*\(|\b(post|get)\s*\(")  # an HTTP-verb call, maybe
URLISH = re.compile(r"""["'](?:/|https?://)|\}/[A-Za-z_]""")  # a string that may be a URL or a route
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_VERB_OPEN = r"\.(?:get|post|put|delete|patch)\s*\(\s*(?:await\s+)?"
# a verb call whose first argument is a URL-like string or f-string (a plain "key" is a dict look-up)
_URL_FIRST = re.compile(
    _VERB_OPEN + r"""(?:[rRbBuU]?["'](?:/|https?://)|[fF][rR]?["'](?:/|https?://|[^"'\n]*\}/))"""
)
# a verb call whose first argument is a name (it counts when the module binds that name to a URL)
_NAME_FIRST = re.compile(_VERB_OPEN + r"([A-Za-z_]\w*)\s*[,)]")
# a verb call whose first argument is built (``base + "/route"``, in parentheses or not)
_BUILT_FIRST = re.compile(_VERB_OPEN + r"(?:\(|[A-Za-z_][\w.]*\s*\+)")
_OTHER_LINE_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _span(node: ast.stmt) -> tuple[int, int]:
    """0-based first and last line of a definition, its decorators included."""
    return first_code_line(node) - 1, (node.end_lineno or node.lineno) - 1


def _assigned_urls(tree: ast.Module, lines: list[str]) -> set[str]:
    """Names bound anywhere in the module by an assignment holding a URL-like string: a call that
    passes one of them may be passing a URL (the extraction resolves module and class bindings)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
            continue
        if URLISH.search("".join(lines[node.lineno - 1 : node.end_lineno or node.lineno])):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _wrapper_call(wrappers: list[tuple[str, tuple[str, ...]]]) -> re.Pattern[str] | None:
    """A call of a declared wrapper as the extraction recognises it: ``name(...)`` or ``x.name(...)``;
    one declared with modules only as a bare name or on a receiver named like one of those modules."""
    forms = []
    for name, modules in wrappers:
        if not modules:
            forms.append(rf"\b{re.escape(name)}\s*\(")
            continue
        forms.append(rf"(?<![\w.]){re.escape(name)}\s*\(")
        receivers = "|".join(re.escape(m.rsplit(".", 1)[-1]) for m in modules)
        forms.append(rf"\b(?:{receivers})\.{re.escape(name)}\s*\(")
    return re.compile("|".join(forms)) if forms else None


def focus(text: str, wrappers: list[tuple[str, tuple[str, ...]]]) -> tuple[str, list[int]]:
    """``text`` without the definitions that cannot hold an HTTP call, and the original line number
    of each line left (1-based); all of it when Python cannot parse it (the extraction then judges
    it whole). ``wrappers``: each declared HTTP helper's name and the modules it must come from."""
    whole = (text, list(range(1, text.count("\n") + text.count("\r") + 2)))  # line i is line i
    if any(ch in text for ch in _OTHER_LINE_BREAKS):
        return whole  # str.splitlines would count lines the parsers do not
    tree = parse_ast(text)
    if tree is None:
        return whole
    lines = text.splitlines(keepends=True)
    module_urls = _assigned_urls(tree, lines)
    wrapper_call = _wrapper_call(wrappers)

    def needed(span: tuple[int, int]) -> bool:
        code = "".join(lines[span[0] : span[1] + 1])
        if "router_policy" in code or (wrapper_call is not None and wrapper_call.search(code)):
            return True
        if _URL_FIRST.search(code) or (_BUILT_FIRST.search(code) and URLISH.search(code)):
            return True
        return any(m.group(1) in module_urls for m in _NAME_FIRST.finditer(code))

    dropped: set[int] = set()

    def blank(span: tuple[int, int], keep: str) -> None:
        if keep:
            ending = lines[span[0]][len(lines[span[0]].rstrip("\r\n")) :] or "\n"
            lines[span[0]] = keep + ending
        dropped.update(range(span[0] + (1 if keep else 0), span[1] + 1))

    for node in tree.body:
        if not isinstance(node, _DEFS):
            continue
        span = _span(node)
        if not needed(span):
            blank(span, "")
        elif isinstance(node, ast.ClassDef):
            for inner in node.body:
                if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef) and not needed(_span(inner)):
                    first = lines[_span(inner)[0]]
                    blank(_span(inner), first[: len(first) - len(first.lstrip())] + "pass")
    kept = [i for i in range(len(lines)) if i not in dropped]
    return "".join(lines[i] for i in kept), [i + 1 for i in kept]
