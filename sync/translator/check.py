"""``vime-sync rules check``: everything that can be wrong with the tables, one line per problem.

Unlike :func:`sync.rules.load_rules`, which stops at the first broken table, this reads every
table on its own and keeps going, so a reviewer sees all problems at once.
"""

from __future__ import annotations

import re
from pathlib import Path

from sync.layout import LayoutError, parse_layout
from sync.rules import (
    DEFAULT_DIRECTORY,
    LAYOUT_TABLE,
    STRING_ROLES,
    Rule,
    RuleTableError,
    read_table,
    rule_table_files,
)
from sync.translator.vllm_imports import ImportUse, is_engine_module, resolve_in_subprocess, vllm_installed

NAME_MATCHES = ("exact", "part")
REGEX_KINDS = ("text", "reference")
TEXT_CONTEXTS = ("prose", "markdown", "code", "shell", "yaml", "dockerfile", "requirements", "other")


def _scope_key(rule: Rule) -> tuple:
    """What must coincide for two rules of a kind to compete for the same input."""
    return (
        rule.kind,
        rule.role,
        rule.extra.get("match", ""),
        rule.extra.get("context", ""),
        tuple(sorted(rule.files)),
        tuple(sorted(rule.extra.get("contexts", ()))),
    )


def schema_problems(rule: Rule) -> list[str]:
    where = f"{rule.source}: rule {rule.id!r}"
    problems = []
    if rule.kind == "string" and rule.role not in STRING_ROLES:
        problems.append(f"{where}: unknown role {rule.role!r}; use one of {', '.join(STRING_ROLES)}")
    if rule.kind == "name" and rule.extra.get("match") not in NAME_MATCHES:
        problems.append(f"{where}: match must be one of {', '.join(NAME_MATCHES)}")
    if rule.kind == "text":
        unknown = set(rule.extra.get("contexts", ())) - set(TEXT_CONTEXTS)
        if unknown or not rule.extra.get("contexts"):
            problems.append(f"{where}: contexts must be a non-empty list of {', '.join(TEXT_CONTEXTS)}")
    if rule.kind in REGEX_KINDS or "scan" in rule.extra:
        for pattern in [rule.from_] if rule.kind in REGEX_KINDS else [rule.extra["scan"]]:
            try:
                re.compile(pattern)
            except re.error as error:
                problems.append(f"{where}: regex does not compile ({error}); fix the pattern")
    if rule.kind == "module" and not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", rule.from_):
        problems.append(f"{where}: from {rule.from_!r} is not a dotted module name")
    if rule.kind == "module" and rule.to.startswith("vllm.srt"):
        problems.append(f"{where}: target {rule.to!r} names vllm.srt, which vLLM does not have")
    return problems


def shadowing_problems(rules: list[Rule]) -> list[str]:
    """Two rules of the same kind and scope with the same ``from``: the second never applies."""
    first: dict[tuple, Rule] = {}
    problems = []
    for rule in rules:
        key = (*_scope_key(rule), rule.from_)
        if key in first:
            other = first[key]
            problems.append(
                f"{rule.source}: rule {rule.id!r} is shadowed by {other.id!r} ({other.source}): "
                f"same {rule.kind} 'from' {rule.from_!r}; merge or remove one"
            )
        else:
            first[key] = rule
    # An earlier text rule that already rewrites a later rule's whole match makes it dead.
    texts = [rule for rule in rules if rule.kind == "text"]
    for index, later in enumerate(texts):
        literal = later.extra.get("example")
        if not literal:
            continue
        for earlier in texts[:index]:
            shared = set(earlier.extra.get("contexts", ())) & set(later.extra.get("contexts", ()))
            if shared and _fullmatch(earlier.from_, literal):
                problems.append(
                    f"{later.source}: rule {later.id!r} is shadowed by {earlier.id!r}, which matches its "
                    f"example {literal!r} first; move it before {earlier.id!r}"
                )
    return problems


def flag_name_problems(rules: list[Rule]) -> list[str]:
    """A flag rule renames ``args.<dest>`` too; an exact name rule for that dest must agree with it."""
    names = {rule.from_: rule for rule in rules if rule.kind == "name" and rule.extra.get("match") == "exact"}
    problems = []
    for flag in rules:
        if flag.kind != "string" or flag.role != "flag" or flag.extra.get("match") == "prefix":
            continue
        dest = flag.from_.lstrip("-").replace("-", "_")
        name = names.get(dest)
        expected = flag.to.lstrip("-").replace("-", "_")
        if name is not None and name.to != expected:
            problems.append(
                f"{name.source}: rule {name.id!r} renames {dest!r} to {name.to!r} but flag rule {flag.id!r} "
                f"makes it {expected!r}; make them agree or remove one"
            )
    return problems


def duplicate_flag_targets(rules: list[Rule]) -> list[str]:
    """Two source flags that map to one target flag: a translated parser that defines both (slime
    defines ``--sglang-pp-size`` and ``--sglang-pipeline-parallel-size``) crashes on a duplicate option."""
    first: dict[str, Rule] = {}
    problems = []
    for rule in rules:
        if (
            rule.kind != "string"
            or rule.role != "flag"
            or rule.leaves_code
            or rule.extra.get("match") == "prefix"
        ):
            continue
        other = first.setdefault(rule.to, rule)
        if other is not rule:
            problems.append(
                f"{rule.source}: rule {rule.id!r} maps {rule.from_} to {rule.to}, as {other.id!r} maps "
                f"{other.from_}: a parser defining both would define {rule.to} twice; map one of them "
                f"to another flag or mark it unsupported"
            )
    return problems


def _fullmatch(pattern: str, text: str) -> bool:
    try:
        return re.fullmatch(pattern, text) is not None or re.search(pattern, text) is not None
    except re.error:
        return False


def import_problems(rules: list[Rule]) -> list[str]:
    """``full`` / ``partial`` module rules whose vLLM target does not import here.

    A target may name a module (``vllm_router``) or a member (``vllm.x.y.Name``): it passes when
    either reading resolves. All targets are checked in one fresh interpreter.
    """
    targets = [rule for rule in rules if rule.kind == "module" and rule.status in ("full", "partial")]
    targets = [rule for rule in targets if is_engine_module(rule.to)]
    uses = []
    for rule in targets:
        parent, _, name = rule.to.rpartition(".")
        uses.append(ImportUse(rule.id, 0, rule.to, None))
        uses.append(ImportUse(rule.id, 0, parent or rule.to, name if parent else None))
    results = resolve_in_subprocess(uses)
    problems = []
    for index, rule in enumerate(targets):
        as_module, as_member = results[2 * index], results[2 * index + 1]
        if not (as_module.ok or as_member.ok):
            problems.append(
                f"{rule.source}: rule {rule.id!r} ({rule.status}) targets {rule.to!r}, which does not "
                f"import in the installed vLLM ({as_member.reason}); fix the target or mark it unsupported"
            )
    return problems


def check_tables(directory: Path | None = None, check_imports: bool = True) -> list[str]:
    """All problems of the tables under ``directory``; an empty list means the tables are sound."""
    directory = Path(directory) if directory is not None else DEFAULT_DIRECTORY
    files = rule_table_files(directory)
    if not files:
        return [f"{directory}: no *.toml rule tables; pass the translations directory"]
    problems: list[str] = []
    if (directory / LAYOUT_TABLE).is_file():
        try:
            parse_layout((directory / LAYOUT_TABLE).read_text(encoding="utf-8"), LAYOUT_TABLE)
        except LayoutError as error:
            problems.append(str(error))
    rules: list[Rule] = []
    seen: dict[str, str] = {}
    for path in files:
        try:
            _kind, table_rules, _settings = read_table(path)
        except RuleTableError as error:
            problems.append(str(error))
            continue
        for rule in table_rules:
            if rule.id in seen:
                problems.append(
                    f"{path.name}: duplicate rule id {rule.id!r} (also in {seen[rule.id]}); rename one"
                )
                continue
            seen[rule.id] = path.name
            rules.append(rule)
            problems.extend(schema_problems(rule))
    problems.extend(shadowing_problems(rules))
    problems.extend(flag_name_problems(rules))
    problems.extend(duplicate_flag_targets(rules))
    if check_imports and vllm_installed():
        problems.extend(import_problems(rules))
    return problems
