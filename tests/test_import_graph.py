"""No import cycles inside vime/ and sync/, and vime's layers import only downward.

The graph comes from each module's own source (an ast walk, nothing imported), and it counts every
import: module level, inside functions, and under ``if TYPE_CHECKING``. A lazy import inside a
function still means the two modules need each other; it only moves the failure from import time
to call time, so a cycle through one is a cycle. ``from pkg import name`` is an edge to
``pkg.name`` when that is a module, else to ``pkg`` (its ``__init__``); importing ``a.b.c`` does not
count as importing the package ``a.b`` (every submodule would then "import" its own ``__init__``).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "sync" / "demo" / "data"  # the demo's upstream repository: files, not vime-sync's code

# vime's layers, lowest first: a module may import its own layer and those before it. The argument
# modules in vime/utils build the parser from the backends' flag groups (slime's layout), so
# vime.backends.vllm_utils.arguments is the one module of a higher layer they may import.
LAYERS = [
    ("vime.utils", "vime.algorithms"),
    ("vime.backends", "vime.rollout", "vime.preflight"),
    ("vime.ray",),
    ("vime.presets", "vime.warm_start", "vime.contract_runner", "vime.compat"),
]
ALLOWED_UP = {
    ("vime.utils.arguments", "vime.backends.vllm_utils.arguments"),
    ("vime.utils.args.validation", "vime.backends.vllm_utils.arguments"),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    files = {
        _module_name(p): p
        for top in ("vime", "sync")
        for p in (ROOT / top).rglob("*.py")
        if not p.is_relative_to(DATA)
    }
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names if alias.name in files}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    base = ".".join(
                        parts[: len(parts) - node.level + 1] + ([node.module] if node.module else [])
                    )
                else:
                    base = node.module or ""
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    if full in files:
                        targets.add(full)
                    elif base in files:
                        targets.add(base)
        graph[name] = targets - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _layer(module: str) -> int | None:
    for rank, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return None


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles (move the shared piece into a module both can import): " + "; ".join(
        " <-> ".join(c) for c in found
    )


def test_cycle_finder_sees_a_lazy_cycle():
    """The finder itself: a two-module cycle and a three-module one are reported, a chain is not."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert cycles({"x": {"y"}, "y": {"z"}, "z": {"x"}}) == [["x", "y", "z"]]
    assert cycles({"x": {"y"}, "y": {"z"}, "z": set()}) == []


def test_vime_layers_import_only_downward():
    graph = import_graph()
    upward = sorted(
        (source, target)
        for source, targets in graph.items()
        for target in targets
        if _layer(source) is not None
        and _layer(target) is not None
        and _layer(target) > _layer(source)
        and (source, target) not in ALLOWED_UP
    )
    assert not upward, "imports from a higher layer: " + ", ".join(f"{s} -> {t}" for s, t in upward)


def test_sync_does_not_import_vime():
    """vime-sync runs on machines without the framework's heavy dependencies; it reaches vime only
    through subprocesses (the gate's contract runs)."""
    graph = import_graph()
    assert not [
        (s, t)
        for s, targets in graph.items()
        if s.startswith("sync")
        for t in targets
        if t.startswith("vime")
    ]
