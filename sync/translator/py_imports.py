"""Imports: module rules applied to ``import x`` / ``from x import y`` (relative ones included).

The same resolution (:func:`resolve_from_import`) also yields the *bindings* — which local name
becomes which — so the name pass renames uses consistently with the rewritten import.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import libcst as cst

from sync.rules import Rule
from sync.translator.compiled import CompiledRules
from sync.translator.cst_base import PassContext, RecordingTransformer

Bindings = dict[str, tuple[str | None, Rule | None]]


def package_of(path: str | None) -> list[str]:
    """Package parts of a module path (``slime/ray/rollout.py`` → ``["slime", "ray"]``)."""
    if not path:
        return []
    parts = path.split("/")[:-1]
    return [part for part in parts if part]


def absolute_module(module: str, level: int, path: str | None) -> str | None:
    if level == 0:
        return module
    package = package_of(path)
    if level - 1 > len(package):
        return None
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def relative_module(absolute: str, level: int, path: str | None) -> str | None:
    """``absolute`` written relative (``level`` dots) from the package of ``path``, if it can be."""
    package = package_of(path)
    base = package[: len(package) - (level - 1)]
    prefix = ".".join(base)
    if absolute == prefix:
        return ""
    if prefix and absolute.startswith(prefix + "."):
        return absolute[len(prefix) + 1 :]
    return None


@dataclass
class ImportedName:
    old_module: str  # absolute
    name: str
    asname: str | None
    new_module: str | None
    new_name: str
    rule: Rule | None

    new_asname: str | None = None
    name_rule: Rule | None = None  # the name rule that renamed the imported name, if any

    @property
    def leaves_code(self) -> bool:
        return self.rule is not None and self.rule.leaves_code


def resolve_from_import(
    rules: CompiledRules, module: str, names: list[tuple[str, str | None]]
) -> list[ImportedName]:
    """Map each ``from module import name [as asname]`` through the module rules."""
    resolved = []
    for name, asname in names:
        new_dotted, rule = rules.rules.map_dotted(f"{module}.{name}") if name != "*" else (None, None)
        if name == "*":
            new_mod, rule = rules.rules.map_dotted(module)
            resolved.append(ImportedName(module, name, asname, new_mod, name, rule))
            continue
        if new_dotted is None:
            resolved.append(ImportedName(module, name, asname, None, name, rule))
            continue
        new_module, _, new_name = new_dotted.rpartition(".")
        new_asname, name_rule = asname, None
        if rules.rules.is_first_party(rule):  # the project's own modules: names follow the name rules
            new_name, name_rule = rules.rename_identifier(new_name)
            if asname:
                new_asname, alias_rule = rules.rename_identifier(asname)
                name_rule = name_rule or alias_rule
        resolved.append(ImportedName(module, name, asname, new_module, new_name, rule, new_asname, name_rule))
    return resolved


_IMPORT_LINE = re.compile(
    r"^[ \t]*(?:from[ \t]+(?P<module>\.*[\w.]*)[ \t]+)?import[ \t]+(?P<names>\([^)]*\)|[^\n#;]*)",
    re.MULTILINE,
)


ImportStatement = tuple[
    str | None, int, list[tuple[str, str | None]]
]  # module (None: `import x`), level, names


def imports_from_ast(tree: ast.Module) -> list[ImportStatement]:
    """Every import statement, nested ones included, as Python's parser sees them."""
    found: list[ImportStatement] = []
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import):
            found.append((None, 0, [(alias.name, alias.asname) for alias in node.names]))
        elif isinstance(node, ast.ImportFrom):
            found.append(
                (node.module or "", node.level, [(alias.name, alias.asname) for alias in node.names])
            )
        else:
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                pending.extend(getattr(node, name, ()) or ())
    return found


def imports_from_text(text: str) -> list[ImportStatement]:
    """The same, by a scan of the text: for sources Python's parser rejects."""
    found: list[ImportStatement] = []
    for match in _IMPORT_LINE.finditer(text):
        names = []
        for item in match.group("names").strip("() \t\n").split(","):
            words = item.split()
            if words:
                names.append((words[0], words[2] if len(words) == 3 and words[1] == "as" else None))
        module = match.group("module")
        if module is None:
            found.append((None, 0, names))
        else:
            level = len(module) - len(module.lstrip("."))
            found.append((module.lstrip("."), level, names))
    return found


def scan_bindings(statements: list[ImportStatement], rules: CompiledRules, path: str) -> Bindings:
    """Local names bound by imports → (new name, or None when the name must stay; the rule)."""
    bindings: Bindings = {}
    for module, level, names in statements:
        if module is None:  # import a.b [as c]
            for dotted, asname in names:
                new, rule = rules.rules.map_dotted(dotted)
                local = asname or dotted.split(".")[0]
                if rule is not None and rule.leaves_code:
                    bindings[local] = (None, rule)
                elif asname:
                    bindings[local] = (asname, rule)
                elif rule is not None:
                    bindings[local] = (new.split(".")[0] if new else None, rule)
                else:
                    bindings[local] = (None, None)
            continue
        absolute = absolute_module(module, level, path)
        if absolute is None:
            continue
        for imported in resolve_from_import(rules, absolute, names):
            local = imported.asname or imported.name
            if imported.leaves_code:
                bindings[local] = (None, imported.rule)
            elif imported.asname:
                bindings[local] = (imported.new_asname, imported.rule)
            elif imported.new_module is None:
                bindings[local] = (None, imported.rule)
            else:
                bindings[local] = (imported.new_name, imported.rule)
    return bindings


def dotted_name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted_name(node.value)}.{node.attr.value}"
    raise TypeError(node)


def dotted_node(dotted: str) -> cst.Attribute | cst.Name:
    parts = dotted.split(".")
    node: cst.Attribute | cst.Name = cst.Name(parts[0])
    for part in parts[1:]:
        node = cst.Attribute(value=node, attr=cst.Name(part))
    return node


class ImportPass(RecordingTransformer):
    def __init__(self, context: PassContext) -> None:
        super().__init__(context)

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> cst.Import:
        new_names = []
        for alias in updated_node.names:
            dotted = dotted_name(alias.name)
            new, rule = self.rules.rules.map_dotted(dotted)
            if rule is not None and rule.leaves_code:
                self.hit(original_node, rule)
            if new is None or new == dotted:
                new_names.append(alias)
                continue
            self.applied(original_node, rule)
            new_names.append(alias.with_changes(name=dotted_node(new)))
        return updated_node.with_changes(names=new_names)

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom) -> cst.ImportFrom:
        level = len(updated_node.relative)
        module = dotted_name(updated_node.module) if updated_node.module is not None else ""
        absolute = absolute_module(module, level, self.context.path)
        if absolute is None:
            return updated_node
        star = isinstance(updated_node.names, cst.ImportStar)
        aliases = [] if star else list(updated_node.names)
        pairs = [("*", None)] if star else [(dotted_name(a.name), _asname(a)) for a in aliases]
        resolved = resolve_from_import(self.rules, absolute, pairs)
        for item in resolved:
            if item.leaves_code:
                self.hit(original_node, item.rule)
        mapped = [item for item in resolved if item.new_module is not None]
        targets = {item.new_module for item in mapped}
        if not mapped or len(mapped) != len(resolved) or len(targets) != 1:
            return updated_node  # nothing to map, or a mix that one statement cannot say: left whole
        target = targets.pop()
        if level:
            relative = relative_module(target, level, self.context.dst_path or self.context.path)
            if relative is None:
                return updated_node
            new_module_text = relative
        else:
            new_module_text = target
        module_changed = new_module_text != module
        if module_changed:
            anchor = original_node.module if original_node.module is not None else original_node
            for rule_id in dict.fromkeys(item.rule.id for item in mapped if item.rule is not None):
                self.applied(anchor, self.rules.rules.rule(rule_id))
        result = updated_node.with_changes(module=dotted_node(new_module_text) if new_module_text else None)
        if star:
            return result if module_changed else updated_node
        new_aliases = []
        for original_alias, alias, item in zip(original_node.names, aliases, mapped, strict=True):
            renamed = _renamed_alias(alias, item)
            if renamed is not alias:
                self.applied(original_alias, item.name_rule or item.rule)
            new_aliases.append(renamed)
        if not module_changed and all(a is b for a, b in zip(new_aliases, aliases, strict=True)):
            return updated_node
        return result.with_changes(names=new_aliases)


def _renamed_alias(alias: cst.ImportAlias, item: ImportedName) -> cst.ImportAlias:
    if item.new_name != item.name:
        alias = alias.with_changes(name=cst.Name(item.new_name))
    if item.new_asname != item.asname and item.new_asname and alias.asname is not None:
        alias = alias.with_changes(asname=alias.asname.with_changes(name=cst.Name(item.new_asname)))
    return alias


def _asname(alias: cst.ImportAlias) -> str | None:
    if alias.asname is None:
        return None
    name = alias.asname.name
    return name.value if isinstance(name, cst.Name) else None
