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
    ("vime.utils.args.start_order", "vime.backends.vllm_utils.arguments"),  # reads two --vllm-* values
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


# vime-sync: a module's unit is its top-level part of sync (``sync.window``, ``sync.ledger``, ...).
# Between units, imports run one way only: the unit graph has no cycle, so no import runs back up.
# sync.model is the ground floor (the shared types and artefact names) and sync.gitio the only
# caller of git; neither imports anything above it. An import that has to run back up for a while
# is listed here ((unit, unit): why); a listed one must still exist, so the list only shrinks.
# None is listed today.
SYNC_UPWARD_LEFT: dict[tuple[str, str], str] = {}


def _sync_unit(module: str) -> str:
    return ".".join(module.split(".")[:2])


def sync_unit_graph() -> dict[str, set[str]]:
    units: dict[str, set[str]] = {}
    for source, targets in import_graph().items():
        if not source.startswith("sync.") and source != "sync":
            continue
        unit = _sync_unit(source)
        units.setdefault(unit, set())
        for target in targets:
            if target.startswith("sync.") and _sync_unit(target) != unit:
                units[unit].add(_sync_unit(target))
    return units


def test_sync_model_is_the_ground_floor():
    graph = import_graph()
    model = {m for m in graph if m == "sync.model" or m.startswith("sync.model.")}
    assert model, "sync.model is missing"
    above = sorted((s, t) for s in model for t in graph[s] if t.startswith("sync") and t not in model)
    assert not above, "sync.model imports from above it: " + ", ".join(f"{s} -> {t}" for s, t in above)


def test_gitio_imports_nothing_of_sync_and_is_the_only_git_caller():
    graph = import_graph()
    assert not [t for t in graph["sync.gitio"] if t.startswith("sync")]
    callers = []
    for path in (ROOT / "sync").rglob("*.py"):
        if path.is_relative_to(DATA) or path == ROOT / "sync" / "gitio.py":
            continue
        for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
            first = node.elts[0] if isinstance(node, ast.List) and node.elts else None
            if isinstance(first, ast.Constant) and first.value == "git":
                callers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not callers, "git run outside sync/gitio.py: " + ", ".join(callers)


def test_sync_units_import_only_downward():
    units = sync_unit_graph()
    for (source, target), why in SYNC_UPWARD_LEFT.items():
        assert target in units.get(source, set()), f"{source} -> {target} no longer imported: drop it ({why})"
        units[source].discard(target)
    found = cycles(units)
    assert not found, (
        "sync units that import each other (move the shared type into sync.model): "
        + "; ".join(" <-> ".join(c) for c in found)
    )
