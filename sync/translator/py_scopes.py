"""Which uses of an imported name are the import: LibCST's scope analysis, where a rename needs it.

``from sglang.srt.server_args import ServerArgs`` becomes ``from vllm.engine.arg_utils import
EngineArgs``, and the uses of the import must follow. A word that is spelled like the import is
not always a use of it: a parameter ``def launch(ServerArgs=None)`` (renaming it changes the
function's keyword interface for every caller), a keyword ``dict(ServerArgs=1)``, an attribute
``obj.ServerArgs``, a local assignment in a function. LibCST's ``ScopeProvider`` tells them apart.

It costs more than the translation itself, so :func:`needs_scopes` first asks Python's own parse
tree (already built) whether a statement spells one of the names anywhere but as a plain
module-level use; only such statements are visited whole and resolved (:func:`import_uses`).
Everywhere else every spelling of the name is a use of the import, and the output is what the
plain pass writes.
"""

from __future__ import annotations

import ast

import libcst as cst
from libcst.metadata import (
    Assignment,
    BuiltinAssignment,
    GlobalScope,
    ImportAssignment,
    MetadataWrapper,
    ScopeProvider,
)

_NEW_SCOPE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.comprehension)


def needs_scopes(node: ast.AST | None, names: frozenset[str]) -> bool:
    """Whether some spelling of ``names`` in statement ``node`` may not be the module's binding.

    Conservative: True for every spelling that is not a module-level load or store of the name
    (a parameter, keyword, attribute, ``global``/``nonlocal``, pattern capture, ``del``, or any
    binding inside a function, class or comprehension).
    """
    if node is None or not names:
        return False
    stack: list[tuple[ast.AST, int]] = [(node, 0)]
    while stack:
        current, depth = stack.pop()
        if _spells_other_than_module_binding(current, depth, names):
            return True
        inner = depth + 1 if isinstance(current, _NEW_SCOPE) else depth
        stack.extend((child, inner) for child in ast.iter_child_nodes(current))
    return False


def _spells_other_than_module_binding(node: ast.AST, depth: int, names: frozenset[str]) -> bool:
    match node:
        case ast.arg(arg=name) | ast.keyword(arg=name) | ast.Attribute(attr=name):
            return name in names
        case ast.Global(names=spelled) | ast.Nonlocal(names=spelled):
            return not names.isdisjoint(spelled)
        case ast.MatchAs(name=name) | ast.MatchStar(name=name) | ast.MatchMapping(rest=name):
            return name in names
        case ast.Name(id=name, ctx=ctx):
            return name in names and (isinstance(ctx, ast.Del) or (depth > 0 and isinstance(ctx, ast.Store)))
        case ast.FunctionDef(name=name) | ast.AsyncFunctionDef(name=name) | ast.ClassDef(name=name):
            return depth > 0 and name in names
        case ast.ExceptHandler(name=name):
            return depth > 0 and name in names
        case ast.alias(name=name, asname=asname):
            return depth > 0 and (asname or name.split(".")[0]) in names
    return False


def import_uses(statement: cst.BaseStatement, names: frozenset[str]) -> set[int]:
    """``id``s of the ``cst.Name`` nodes in top-level ``statement`` that are uses of the module's
    binding of one of ``names``: loads that resolve to a module-level assignment, to an import or
    to nothing in the statement (the file's import), module-level stores, and ``global`` names."""
    wrapper = MetadataWrapper(cst.Module(body=[statement]), unsafe_skip_copy=True)
    scopes = {scope for scope in wrapper.resolve(ScopeProvider).values() if scope is not None}
    uses: set[int] = set()
    for scope in scopes:
        for access in scope.accesses:
            node = access.node
            if (
                isinstance(node, cst.Name)
                and node.value in names
                and all(_is_module_binding(referent) for referent in access.referents)
            ):
                uses.add(id(node))
        if not isinstance(scope, GlobalScope):
            continue
        for assignment in scope.assignments:
            if assignment.name in names and isinstance(assignment, Assignment):
                target = assignment.node
                if isinstance(target, cst.FunctionDef | cst.ClassDef):
                    target = target.name
                if isinstance(target, cst.Name):
                    uses.add(id(target))
    for found in _global_statements(statement):
        uses.update(id(item.name) for item in found.names if item.name.value in names)
    return uses


def _is_module_binding(referent) -> bool:
    return isinstance(referent, ImportAssignment | BuiltinAssignment) or isinstance(
        referent.scope, GlobalScope
    )


def _global_statements(statement: cst.BaseStatement) -> list[cst.Global]:
    found: list[cst.Global] = []

    class _Find(cst.CSTVisitor):
        def visit_Global(self, node: cst.Global) -> None:
            found.append(node)

    statement.visit(_Find())
    return found
