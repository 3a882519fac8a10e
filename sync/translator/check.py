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
from sync.translator import target_flags
from sync.translator.vllm_imports import ImportUse, is_engine_module, resolve_in_subprocess, vllm_installed

NAME_MATCHES = ("exact", "part")
FLAG_MATCHES = ("prefix", "fallback", "regex")  # absent: one flag
_PASS_THROUGH_IN_TEXT = re.compile(r"(?<![\w-])(?:--no-vllm-|--vllm-)[a-z0-9][a-z0-9-]*")
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
    if rule.kind == "string" and rule.role == "flag":
        problems.extend(_flag_schema_problems(rule, where))
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


def _flag_schema_problems(rule: Rule, where: str) -> list[str]:
    match = rule.extra.get("match")
    problems = []
    if match is not None and match not in FLAG_MATCHES:
        problems.append(f"{where}: match must be one of {', '.join(FLAG_MATCHES)} (or absent: one flag)")
    if match == "regex":
        try:
            re.compile(rule.from_)
        except re.error as error:
            problems.append(f"{where}: regex does not compile ({error}); fix the pattern")
    values = rule.extra.get("values")
    if values is not None and (
        not isinstance(values, dict)
        or match is not None
        or not all(isinstance(v, str) for v in values.values())
    ):
        problems.append(f"{where}: values must be a table of strings on a rule for one flag")
    if rule.extra.get("target", target_flags.VIME_TARGET) != target_flags.VIME_TARGET:
        problems.append(f"{where}: target may only be {target_flags.VIME_TARGET!r} (one of vime's own flags)")
    return problems


def _named_pass_through(rule: Rule) -> list[tuple[str, bool]]:
    """The ``--vllm-*`` flags a flag rule writes or tells the reader to use: (flag, is vime's own)."""
    own = rule.extra.get("target") == target_flags.VIME_TARGET
    named = [(rule.to, own)] if not rule.leaves_code and target_flags.serve_option(rule.to) else []
    named += [(flag, False) for flag in _PASS_THROUGH_IN_TEXT.findall(rule.note) if flag != rule.to]
    return named


def flag_target_problems(
    rules: list[Rule], serve_options: frozenset[str] | None, vime_flags: set[str] | None
) -> list[str]:
    """Flag rules whose ``--vllm-*`` target, or a ``--vllm-*`` flag their note recommends, neither
    the installed vLLM's ``vllm serve`` (``serve_options``) nor vime (``vime_flags``) has.
    ``None``: that side cannot be read here and is not checked."""
    flags = [rule for rule in rules if rule.kind == "string" and rule.role == "flag"]
    prefix = next((rule for rule in flags if rule.extra.get("match") == "prefix"), None)
    managed = prefix.extra.get("managed", ()) if prefix is not None else ()
    problems = []
    for rule in flags:
        if rule.extra.get("match") in ("prefix", "fallback"):
            continue
        for flag, own in _named_pass_through(rule):
            known_to_vime = vime_flags is None or flag in vime_flags
            if own and not known_to_vime:
                problems.append(
                    f"{rule.source}: rule {rule.id!r} maps to vime's own {flag}, which vime does not define; "
                    f"fix the target"
                )
            elif (
                not own
                and serve_options is not None
                and not (
                    target_flags.passes_through(flag, serve_options, managed)
                    or (vime_flags and flag in vime_flags)
                )
            ):
                what = "maps to" if flag == rule.to else "recommends"
                option = target_flags.serve_option(flag)
                why = (
                    f"vime sets {option} itself (flag.prefix's managed list)"
                    if option in serve_options
                    else f"the installed vLLM's `vllm serve` has no {option}"
                )
                problems.append(
                    f"{rule.source}: rule {rule.id!r} {what} {flag}, but {why}; use vLLM's spelling or "
                    f"mark the rule unsupported"
                )
    return problems


def installed_vime_pass_through_flags() -> set[str] | None:
    """vime's own ``--vllm-*`` flags, read from the installed framework's sources (None: not found)."""
    from sync.packaged import framework_root
    from sync.translator.vllm_flags import installed_vime_flags

    try:
        root = framework_root()
    except (ModuleNotFoundError, TypeError):
        return None
    return installed_vime_flags(root) if (root / "vime").is_dir() else None


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
    options = target_flags.installed_serve_options() if check_imports else None
    problems.extend(flag_target_problems(rules, options, installed_vime_pass_through_flags()))
    return problems
