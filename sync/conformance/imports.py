"""Every ``vime.*`` import, attribute and hook path in translated code, checked against a vime.

The module rules map ``slime.X`` to ``vime.X`` whether or not vime has ``X``: a translated plugin
can import cleanly in the translator's eyes and die at its first line (``No module named
'vime.agent'``). This check reads vime's source without importing it (no torch, no vLLM, no side
effects) and reports each reference that would fail, as a conformance :class:`Finding`:

- ``import vime.a.b`` / ``from vime.a import b`` (relative imports resolved), in any function;
- attribute chains on names bound to a vime module (``U.load_function`` after
  ``import vime.utils.misc as U``), where the name is never rebound in the file;
- dotted hook paths after a ``--xxx-path`` flag (``--custom-rm-path vime.rollout.opd.reward_func``)
  in Python, shell and YAML text: a launch script loads them by name.

Names a module defines are its top-level bindings (definitions, assignments, imports, in ``if`` /
``try`` blocks too), names declared ``global`` in its functions, ``from x import *`` of another
vime module, and its submodules; a module with a top-level ``__getattr__`` answers any name.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sync.conformance.model import Finding
from sync.conformance.reexports import module_name
from sync.translator.spans import parse_ast

PACKAGE = "vime"
MISSING_MODULE = "missing-module"
MISSING_NAME = "missing-name"
IMPORT_FINDING_KINDS = (MISSING_MODULE, MISSING_NAME)
_HOOK_PATH = re.compile(r"(--[a-z][a-z0-9-]*-path)[\s=]+[\"']?(vime(?:\.[A-Za-z_]\w*)+)")


@dataclass(frozen=True)
class ModuleNames:
    """What ``from module import name`` can find in a module."""

    names: frozenset[str]
    open: bool = False  # a module-level __getattr__, or a star import from outside vime


@dataclass
class Surface:
    """A package's modules and their names, read from source (``root`` holds the package folder).

    ``overlay`` adds modules that are not on disk (``{dotted name: source}``, e.g. the rest of a
    translated tree); ``on_disk`` says which came from ``root``.
    """

    root: Path | None
    overlay: Mapping[str, str] = field(default_factory=dict)
    _cache: dict[str, ModuleNames | None] = field(default_factory=dict, repr=False)

    def _file(self, dotted: str) -> Path | None:
        if self.root is None:
            return None
        base = self.root.joinpath(*dotted.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    def on_disk(self, dotted: str) -> bool:
        return self._file(dotted) is not None

    def exists(self, dotted: str) -> bool:
        return dotted in self.overlay or self.on_disk(dotted) or self._namespace(dotted)

    def _namespace(self, dotted: str) -> bool:
        """A folder without ``__init__.py`` that holds modules imports as a namespace package."""
        if self.root is None:
            return False
        folder = self.root.joinpath(*dotted.split("."))
        return folder.is_dir() and any(folder.glob("*.py"))

    def source(self, dotted: str) -> str | None:
        path = self._file(dotted)
        if path is not None:
            return path.read_text(encoding="utf-8", errors="surrogateescape")
        return self.overlay.get(dotted)

    def is_package(self, dotted: str) -> bool:
        path = self._file(dotted)
        if path is not None:
            return path.name == "__init__.py"
        return any(other.startswith(dotted + ".") for other in self.overlay) or self._namespace(dotted)

    def names(self, dotted: str, _seen: frozenset[str] = frozenset()) -> ModuleNames | None:
        """The module's names, or None when the module does not exist."""
        if dotted in self._cache:
            return self._cache[dotted]
        text = self.source(dotted)
        if text is None:
            result = ModuleNames(frozenset()) if self.exists(dotted) else None
            self._cache[dotted] = result
            return result
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            self._cache[dotted] = ModuleNames(frozenset(), open=True)  # cannot tell: do not accuse it
            return self._cache[dotted]
        names, stars, has_getattr = _bindings(tree)
        is_open = has_getattr
        for level, module in stars:
            source = _resolve(level, module, dotted, self.is_package(dotted))
            if source is None or source.split(".")[0] != PACKAGE or source in _seen:
                is_open = True
                continue
            other = self.names(source, _seen | {dotted})
            if other is None:
                continue
            names |= other.names
            is_open = is_open or other.open
        result = ModuleNames(frozenset(names), is_open)
        self._cache[dotted] = result
        return result

    def has(self, dotted: str, name: str) -> bool:
        """Would ``from dotted import name`` work (a bound name or a submodule)?"""
        if self.exists(f"{dotted}.{name}"):
            return True
        found = self.names(dotted)
        return found is not None and (found.open or name in found.names)

    def digest(self) -> str:
        """Changes when any module of the package changes (a cache key for findings)."""
        h = hashlib.sha256()
        if self.root is not None:
            for path in sorted((self.root / PACKAGE).rglob("*.py")):
                h.update(path.relative_to(self.root).as_posix().encode() + b"\0" + path.read_bytes())
        for name in sorted(self.overlay):
            h.update(name.encode() + b"\0" + self.overlay[name].encode("utf-8", "surrogateescape"))
        return h.hexdigest()[:16]


@dataclass
class Union:
    """Several surfaces as one: a module or name exists when any of them has it."""

    surfaces: list[Surface]

    def exists(self, dotted: str) -> bool:
        return any(s.exists(dotted) for s in self.surfaces)

    def has(self, dotted: str, name: str) -> bool:
        return any(s.has(dotted, name) for s in self.surfaces if s.exists(dotted))


def _targets(node: ast.AST) -> Iterable[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Tuple | ast.List):
        for element in node.elts:
            yield from _targets(element)
    elif isinstance(node, ast.Starred):
        yield from _targets(node.value)


def _bindings(tree: ast.Module) -> tuple[set[str], list[tuple[int, str | None]], bool]:
    """(names bound at module level, star imports as (level, module), defines __getattr__)."""
    names: set[str] = set()
    stars: list[tuple[int, str | None]] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    names.update(_targets(target))
            elif isinstance(node, ast.AnnAssign | ast.AugAssign):
                names.update(_targets(node.target))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    names.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name == "*":
                        stars.append((node.level, node.module))
                    else:
                        names.add(alias.asname or alias.name)
            elif isinstance(node, ast.For | ast.AsyncFor):
                names.update(_targets(node.target))
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.With | ast.AsyncWith):
                for item in node.items:
                    if item.optional_vars is not None:
                        names.update(_targets(item.optional_vars))
                visit(node.body)
            elif isinstance(node, ast.If | ast.While):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try | ast.TryStar):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.Match):
                for case in node.cases:
                    visit(case.body)

    visit(tree.body)
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            names.update(node.names)
        elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names, stars, "__getattr__" in names


def _resolve(level: int, module: str | None, current: str | None, is_package: bool) -> str | None:
    if level == 0:
        return module
    if current is None:
        return None
    base = current.split(".") if is_package else current.split(".")[:-1]
    if level - 1 > len(base) or (level - 1 == len(base) and not module):
        return None
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base) or None


# ----- references in a translated file ---------------------------------------------------------
@dataclass(frozen=True, order=True)
class VimeRef:
    """One reference to vime: ``module`` must exist and, when ``name`` is set, have that name."""

    line: int
    module: str
    name: str | None
    text: str  # how the code spells it, for the message
    attribute: bool = False  # read on a name that may be bound to a module: checked only if it is one


def python_refs(text: str, path: str) -> list[VimeRef]:
    """Imports of vime modules and names, and attributes read on names bound to vime modules."""
    tree = parse_ast(text)
    if tree is None:
        return []
    current = module_name(path)
    is_package = path.endswith("__init__.py")
    refs: list[VimeRef] = []
    bound: dict[str, str] = {}  # local name -> the vime module it is
    stored: set[str] = set()
    inner: set[int] = set()  # id() of attributes read on an attribute (the chain's inner links)
    attributes: list[ast.Attribute] = []
    for node in ast.walk(tree):  # one walk: imports first in the refs, then attribute reads
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            stored.add(node.id)
        elif isinstance(node, ast.Attribute):
            attributes.append(node)
            inner.add(id(node.value))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != PACKAGE:
                    continue
                refs.append(VimeRef(node.lineno, alias.name, None, f"import {alias.name}"))
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    bound[PACKAGE] = PACKAGE
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(node.level, node.module, current, is_package)
            if source is None or source.split(".")[0] != PACKAGE:
                continue
            spelled = f"from {'.' * node.level}{node.module or ''} import"
            refs.append(VimeRef(node.lineno, source, None, f"{spelled} ..."))
            for alias in node.names:
                if alias.name == "*":
                    continue
                refs.append(VimeRef(node.lineno, source, alias.name, f"{spelled} {alias.name}"))
                bound[alias.asname or alias.name] = f"{source}.{alias.name}"  # a module, if it is one
    for node in attributes:
        if id(node) in inner:
            continue
        chain = _attribute_chain(node)
        if chain is None or chain[0] not in bound or chain[0] in stored:
            continue
        dotted = ".".join(chain)
        refs.append(VimeRef(node.lineno, bound[chain[0]], ".".join(chain[1:]), dotted, attribute=True))
    return refs


def _attribute_chain(node: ast.Attribute) -> list[str] | None:
    parts: list[str] = []
    current: ast.AST = node
    while isinstance(current, ast.Attribute):
        parts.append(current.attr)
        current = current.value
    if not isinstance(current, ast.Name):
        return None
    return [current.id, *reversed(parts)]


def hook_path_refs(text: str) -> list[VimeRef]:
    """``--xxx-path vime.a.b.fn`` in any text: a hook vime loads by name (module ``vime.a.b``, ``fn``)."""
    refs = []
    for match in _HOOK_PATH.finditer(text):
        dotted = match.group(2)
        module, _, attr = dotted.rpartition(".")
        line = text.count("\n", 0, match.start(2)) + 1
        refs.append(VimeRef(line, module, attr, f"{match.group(1)} {dotted}"))
    return refs


# ----- checking -------------------------------------------------------------------------------
def missing(ref: VimeRef, surface: Surface | Union) -> tuple[str, str] | None:
    """(finding kind, what is missing) for a reference the surface cannot satisfy, else None."""
    if ref.attribute and not surface.exists(ref.module):
        return None  # the name is a function or class, not a module: what it holds is not checked
    parts = ref.module.split(".")
    for depth in range(1, len(parts) + 1):
        prefix = ".".join(parts[:depth])
        if surface.exists(prefix):
            continue
        parent = ".".join(parts[: depth - 1])
        if depth > 1 and not surface.has(parent, parts[depth - 1]):
            return MISSING_MODULE, prefix
        if depth > 1:  # a name of the parent, not a module: `from vime.a.b import x` where b is a name
            return None
        return MISSING_MODULE, prefix
    if ref.name is None:
        return None
    module = ref.module
    for attr in ref.name.split("."):
        if surface.exists(f"{module}.{attr}"):
            module = f"{module}.{attr}"
            continue
        if surface.has(module, attr):
            return None  # a name of the module: what it holds is not checked
        return MISSING_NAME, f"{module}.{attr}"
    return None


def _carried(what: str, carried: Surface | None) -> str:
    if carried is None:
        return ""
    module = what
    while module and not carried.exists(module):
        module = module.rpartition(".")[0]
    if not module or module == PACKAGE:
        return ""
    return f" (the translated tree carries {module} from upstream; vime has not taken it)"


def check_refs(
    path: str,
    refs: Iterable[VimeRef],
    surface: Surface | Union,
    rule_at=lambda first, last: "conformance",
    carried: Surface | None = None,
) -> list[Finding]:
    """One finding per line and missing thing (a name reported once per line)."""
    findings: dict[tuple[int, str], Finding] = {}
    for ref in sorted(set(refs), key=lambda r: (r.line, r.module, r.name or "", r.text)):
        gap = missing(ref, surface)
        if gap is None:
            continue
        kind, what = gap
        owner, _, name = what.rpartition(".")
        if kind == MISSING_MODULE:
            message = f"{ref.text}: vime has no module {what}"
        else:
            message = f"{ref.text}: {owner} has no name {name!r}"
        message += _carried(what, carried)
        message += "; provide it in vime, or map the upstream name elsewhere in translations/"
        key = (ref.line, what)
        if key not in findings:
            findings[key] = Finding(path, ref.line, rule_at(ref.line, ref.line), kind, message, "import")
    return sorted(findings.values())


def file_refs(path: str, text: str, is_python: bool) -> list[VimeRef]:
    refs = python_refs(text, path) if is_python else []
    return refs + hook_path_refs(text)


def check_file(
    path: str, text: str, surface: Surface | Union, rule_at=lambda first, last: "conformance",
    carried: Surface | None = None,
) -> list[Finding]:  # fmt: skip
    """Findings for one file (Python, or text with hook paths)."""
    return check_refs(path, file_refs(path, text, path.endswith(".py")), surface, rule_at, carried)


@functools.cache
def installed_root() -> Path | None:
    """The folder holding the installed ``vime`` package (found without importing it), or None."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve().parent


@functools.cache
def installed_surface() -> Surface | None:
    """The installed vime (one per process: its parsed modules are cached in it)."""
    root = installed_root()
    return Surface(root) if root is not None else None


def checked_here(dst_path: str) -> bool:
    """Files the per-file stage checks against the installed vime: those outside vime's package
    (plugins, examples, scripts). vime's own files import modules the same window may add; the gate
    checks them on the merged worktree, and ``translate`` against the tree it wrote."""
    return dst_path.split("/")[0] != PACKAGE
