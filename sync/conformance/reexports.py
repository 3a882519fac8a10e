"""SGLang-only names that reach a file through a re-export module, reported where they are used.

slime keeps its SGLang imports for the trainer in one module (``megatron_utils/sglang.py``:
``from sglang.srt.utils import MultiprocessingSerializer`` ...) and the weight-update files import
from it (``from ..sglang import MultiprocessingSerializer``). The translator renames the module
(``vllm_compat``) and reports its SGLang imports there, but the files that use the names carry no
SGLang reference at all, so nothing pointed at them. This pass reads the whole translated tree:
for every module that binds names from SGLang modules no rule converts, each import of those
names elsewhere becomes an ``unsupported`` hit at the importing line, under the rule that left
the SGLang import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from sync.rules import RuleSet
from sync.translator.model import Hit

UNMAPPED = "reexport.sglang"  # the rule id when no rule covers the SGLang module at all


def module_name(path: str) -> str | None:
    if not path.endswith(".py"):
        return None
    parts = path[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str | None:
    if node.level == 0:
        return node.module
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level - 1 > len(base):
        return None
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _sglang_bindings(tree: ast.Module, rules: RuleSet, exported: dict[str, dict[str, str]], module: str,
                     is_package: bool) -> dict[str, str]:  # fmt: skip
    """Names this module binds from SGLang (or from another re-export module) -> rule id."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        source = _absolute(node, module, is_package)
        if source is None:
            continue
        for alias in node.names:
            local = alias.asname or alias.name
            if source.split(".")[0].startswith("sglang"):
                rule = rules.module_rule(f"{source}.{alias.name}")
                if rule is None or rule.status == "unsupported":
                    bound[local] = rule.id if rule is not None else UNMAPPED
            elif alias.name in exported.get(source, {}):
                bound[local] = exported[source][alias.name]
    return bound


def reexport_hits(files: Iterable[tuple[str, str]], rules: RuleSet) -> dict[str, list[Hit]]:
    """``{path: hits}`` over translated Python files given as ``(downstream path, text)``."""
    trees: dict[str, tuple[str, ast.Module, bool]] = {}
    for path, text in files:
        module = module_name(path)
        if module is None:
            continue
        try:
            trees[module] = (path, ast.parse(text), path.endswith("__init__.py"))
        except (SyntaxError, ValueError):
            continue
    exported: dict[str, dict[str, str]] = {}
    for _round in range(3):  # re-exports of re-exports, a few levels deep
        for module, (_path, tree, is_package) in trees.items():
            bound = _sglang_bindings(tree, rules, exported, module, is_package)
            if bound:
                exported[module] = bound
    hits: dict[str, list[Hit]] = {}
    for module, (path, tree, is_package) in trees.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _absolute(node, module, is_package)
            names = exported.get(source or "", {})
            used = [alias.name for alias in node.names if alias.name in names]
            if not used or source == module:
                continue
            snippet = f"from {'.' * node.level}{node.module or ''} import {', '.join(used)}"
            for name in used:
                hits.setdefault(path, []).append(
                    Hit(names[name], node.lineno, f"{snippet}  # {name}: SGLang-only")
                )
    return {path: sorted(set(found)) for path, found in hits.items()}
