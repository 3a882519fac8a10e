"""Structure-aware merge: settle a line conflict when each top-level definition was changed by one side only.

A line merge conflicts when two sides edit nearby lines, even in different functions. Here each
side is split into top-level statements (imports, functions, classes, assignments) with libcst and
merged per definition; the result is accepted only when it parses.
"""

from __future__ import annotations

import libcst as cst

_Key = tuple[str, str, int]


def _stmt_key(module: cst.Module, stmt: cst.CSTNode) -> tuple[str, str]:
    """Identity of a top-level statement across versions: its name where it has one, else its text."""
    if isinstance(stmt, cst.FunctionDef | cst.ClassDef):
        return ("def", stmt.name.value)
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        small = stmt.body[0]
        if isinstance(small, cst.Assign):
            targets = ",".join(module.code_for_node(t.target) for t in small.targets)
            return ("assign", targets)
        if isinstance(small, cst.AnnAssign):
            return ("assign", module.code_for_node(small.target))
        if isinstance(small, cst.Import):  # keyed by module, so an edited import keeps its place
            return ("import", ",".join(module.code_for_node(alias.name) for alias in small.names))
        if isinstance(small, cst.ImportFrom):
            name = module.code_for_node(small.module) if small.module else ""
            return ("from", "." * len(small.relative) + name)
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString | cst.ConcatenatedString):
            return ("docstring", "")
    if isinstance(stmt, cst.If):
        return ("if", module.code_for_node(stmt.test))
    return ("stmt", module.code_for_node(stmt).strip())


def _split(text: str) -> tuple[str, list[tuple[_Key, str]], str] | None:
    """(header, [(key, code)], footer) of a module, or None when it does not parse."""
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError:
        return None
    header = "".join(module.code_for_node(line) for line in module.header)
    footer = "".join(module.code_for_node(line) for line in module.footer)
    seen: dict[tuple[str, str], int] = {}
    parts: list[tuple[_Key, str]] = []
    for stmt in module.body:
        kind, name = _stmt_key(module, stmt)
        n = seen.get((kind, name), 0)
        seen[(kind, name)] = n + 1
        parts.append(((kind, name, n), module.code_for_node(stmt)))
    if header + "".join(c for _, c in parts) + footer != text:
        return None  # an encoding or newline quirk: do not risk a lossy merge
    return header, parts, footer


def _pick(ours: str | None, base: str | None, theirs: str | None) -> tuple[bool, str | None]:
    """Per-definition 3-way choice: (ok, result text or None for 'absent')."""
    if ours == theirs:
        return True, ours
    if ours == base:
        return True, theirs
    if theirs == base:
        return True, ours
    return False, None


def struct_merge(ours: bytes, base: bytes, theirs: bytes) -> bytes | None:
    """Merged module when every top-level definition changed on at most one side, else None."""
    try:
        texts = [t.decode("utf-8") for t in (ours, base, theirs)]
    except UnicodeDecodeError:
        return None
    split = [_split(t) for t in texts]
    if any(s is None for s in split):
        return None
    (oh, op, of), (bh, bp, bf), (th, tp, tf) = split  # type: ignore[misc]
    ok_h, header = _pick(oh, bh, th)
    ok_f, footer = _pick(of, bf, tf)
    if not (ok_h and ok_f):
        return None
    o_map, b_map, t_map = dict(op), dict(bp), dict(tp)
    o_order = [k for k, _ in op]
    t_order = [k for k, _ in tp]
    common = [k for k in o_order if k in t_map]
    if common != [k for k in t_order if k in o_map]:
        return None  # the sides reordered definitions differently
    merged: dict[_Key, str] = {}
    for key in dict.fromkeys(o_order + t_order + [k for k, _ in bp]):
        ok, code = _pick(o_map.get(key), b_map.get(key), t_map.get(key))
        if not ok:
            return None
        if code is not None:
            merged[key] = code
    order: list[_Key] = [k for k in o_order if k in merged]
    for i, key in enumerate(t_order):
        if (
            key in merged and key not in order
        ):  # added by theirs: after its predecessor, else before its successor
            prev = next((t_order[j] for j in range(i - 1, -1, -1) if t_order[j] in order), None)
            succ = next((k for k in t_order[i + 1 :] if k in order), None)
            if prev is not None:
                order.insert(order.index(prev) + 1, key)
            elif succ is not None:
                order.insert(order.index(succ), key)
            else:
                order.append(key)
    result = (header or "") + "".join(merged[k] for k in order) + (footer or "")
    try:
        cst.parse_module(result)
    except cst.ParserSyntaxError:
        return None
    return result.encode("utf-8")
