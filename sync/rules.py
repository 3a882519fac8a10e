"""The SGLang→vLLM rule tables: loading, lookup and the stable hash that keys translation caches.

The tables are data (``translations/*.toml``, one file per kind of rule, as HIPIFY keeps one table
per API family); this module only parses them into :class:`Rule` objects and answers lookups.
Validation beyond the schema (shadowing, vLLM import checks) lives in ``sync.translator.check``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from sync.packaged import translations_dir

DEFAULT_DIRECTORY = translations_dir()  # the wheel's sync/translations, else the checkout's translations/

KINDS = ("module", "name", "kwarg", "string", "shape", "path", "text", "not_mirrored", "reference")
STATUSES = ("full", "partial", "unsupported", "keep")
STRING_ROLES = ("endpoint", "flag", "field", "env", "word")
BASE_KEYS = {"id", "from", "to", "status", "note"}


class RuleTableError(ValueError):
    """A table that cannot be loaded; the message names the file and the rule."""


@dataclass(frozen=True)
class Rule:
    """One row of a table. ``from_`` is the TOML key ``from``; kind-specific keys sit in ``extra``."""

    id: str
    kind: str
    from_: str
    to: str
    status: str
    note: str
    source: str = ""  # the table file it came from (for error messages)
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def files(self) -> tuple[str, ...]:
        """Glob patterns restricting where the rule applies (empty: everywhere)."""
        return tuple(self.extra.get("files", ()))

    @property
    def role(self) -> str:
        return str(self.extra.get("role", ""))

    @property
    def leaves_code(self) -> bool:
        """``unsupported`` and ``keep`` rules leave the upstream code as it is (and cover it)."""
        return self.status in ("unsupported", "keep")

    def applies_to(self, path: str) -> bool:
        return not self.files or any(fnmatch.fnmatchcase(path, pattern) for pattern in self.files)


def _segment_regex(fragment: str) -> re.Pattern[str]:
    """Match ``fragment`` only at path-segment boundaries (``/`` or the ends)."""
    return re.compile(r"(?:(?<=/)|^)" + re.escape(fragment) + r"(?=/|$)")


@dataclass
class RuleSet:
    """All rules of all tables, with the lookups the translator needs."""

    rules: list[Rule]
    hash: str
    directory: Path | None = None
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)  # per kind: a table's other keys

    def __post_init__(self) -> None:
        self._by_id = {rule.id: rule for rule in self.rules}

    def rule(self, rule_id: str) -> Rule:
        try:
            return self._by_id[rule_id]
        except KeyError:
            raise KeyError(f"no rule with id {rule_id!r} in the tables ({self.directory})") from None

    def of_kind(self, kind: str) -> list[Rule]:
        return [rule for rule in self.rules if rule.kind == kind]

    @cached_property
    def _not_mirrored(self) -> list[Rule]:
        return self.of_kind("not_mirrored")

    @cached_property
    def _path_rules(self) -> list[tuple[Rule, re.Pattern[str]]]:
        # Longer fragments first, so ``sglang_utils/sglang_engine.py`` wins over ``sglang_utils``.
        segments = [rule for rule in self.of_kind("path") if rule.extra.get("match", "segment") == "segment"]
        ordered = sorted(segments, key=lambda r: (-len(r.from_), r.id))
        return [(rule, _segment_regex(rule.from_)) for rule in ordered]

    @cached_property
    def _part_rules(self) -> list[tuple[Rule, re.Pattern[str]]]:
        """``match = "part"`` path rules: a word inside any path segment or module name."""
        parts = [rule for rule in self.of_kind("path") if rule.extra.get("match") == "part"]
        return [
            (rule, re.compile(r"(?<![A-Za-z0-9])" + re.escape(rule.from_) + r"(?![a-z0-9])"))
            for rule in parts
        ]

    @cached_property
    def _kept_segments(self) -> list[str]:
        return [rule.from_ for rule in self.of_kind("path") if rule.status == "keep"]

    def is_first_party(self, rule: Rule | None) -> bool:
        """Does the rule map into the downstream's own code (vime, vime_plugins, tests, …)?"""
        return rule is not None and not rule.leaves_code and rule.to.split(".")[0] in self.first_party_roots

    @cached_property
    def first_party_roots(self) -> frozenset[str]:
        """Top-level packages the framework owns downstream (``vime``, ``vime_plugins``)."""
        return frozenset(
            rule.to
            for rule in self.of_kind("module")
            if rule.status == "full" and "." not in rule.from_ and rule.to and "." not in rule.to
        )

    def rename_parts(self, segment: str) -> tuple[str, Rule | None]:
        """Apply the part rules to one path segment or module component (kept names stay)."""
        if any(fnmatch.fnmatchcase(segment, kept) for kept in self._kept_segments):
            return segment, None
        used = None
        for rule, regex in self._part_rules:
            new = regex.sub(rule.to, segment)
            if new != segment:
                segment, used = new, used or rule
        return segment, used

    def not_mirrored_rule(self, upstream_path: str) -> Rule | None:
        for rule in self._not_mirrored:
            if fnmatch.fnmatchcase(upstream_path, rule.from_):
                return rule
        return None

    def map_path(self, upstream_path: str) -> str | None:
        """The downstream path of an upstream file, or None when the file is not mirrored."""
        return self.map_path_with_rules(upstream_path)[0]

    def map_path_with_rules(self, upstream_path: str) -> tuple[str | None, list[Rule]]:
        if self.not_mirrored_rule(upstream_path) is not None:
            return None, []
        path, applied = upstream_path, []
        for rule, regex in self._path_rules:
            if rule.leaves_code:
                continue
            new = regex.sub(rule.to, path)
            if new != path:
                applied.append(rule)
                path = new
        segments = []
        for segment in path.split("/"):
            new, rule = self.rename_parts(segment)
            if rule is not None and rule not in applied:
                applied.append(rule)
            segments.append(new)
        return "/".join(segments), applied

    # --- module rules -------------------------------------------------------------------------
    @cached_property
    def _modules(self) -> dict[str, Rule]:
        return {rule.from_: rule for rule in self.of_kind("module")}

    def module_rule(self, dotted: str) -> Rule | None:
        """The rule for a dotted name: an exact entry, else the longest module prefix."""
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            rule = self._modules.get(".".join(parts[:cut]))
            if rule is not None:
                return rule
        return None

    def map_dotted(self, dotted: str) -> tuple[str | None, Rule | None]:
        """Translate a dotted name; ``(None, rule)`` when the rule leaves the code, ``(None, None)`` if no rule."""
        rule = self.module_rule(dotted)
        if rule is None:
            return None, None
        if rule.leaves_code:
            return None, rule
        new = rule.to + dotted[len(rule.from_) :]
        if new.split(".")[0] in self.first_party_roots:  # module names follow the file names
            new = ".".join(self.rename_parts(component)[0] for component in new.split("."))
        return new, rule


def _rule_from_row(row: dict[str, Any], kind: str, source: str) -> Rule:
    missing = [key for key in ("id", "from", "status", "note") if key not in row]
    if missing:
        raise RuleTableError(f"{source}: rule {row.get('id', '?')!r} lacks {', '.join(missing)}")
    status = row["status"]
    if status not in STATUSES:
        raise RuleTableError(
            f"{source}: rule {row['id']!r} has status {status!r}; use one of {', '.join(STATUSES)}"
        )
    to = row.get("to", "")
    if status in ("full", "partial") and kind not in ("not_mirrored", "reference") and to == "":
        raise RuleTableError(f"{source}: rule {row['id']!r} is {status} but has no 'to'")
    extra = {key: value for key, value in row.items() if key not in BASE_KEYS}
    return Rule(
        id=str(row["id"]),
        kind=kind,
        from_=str(row["from"]),
        to=str(to),
        status=status,
        note=str(row["note"]),
        source=source,
        extra=extra,
    )


def read_table(path: Path) -> tuple[str, list[Rule], dict[str, Any]]:
    """Parse one table file: its ``kind``, its rules and its settings (schema errors raise RuleTableError)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise RuleTableError(f"{path.name}: not valid TOML ({error}); fix the syntax") from None
    except UnicodeDecodeError:
        raise RuleTableError(f"{path.name}: not UTF-8 text; save the table as UTF-8") from None
    kind = data.get("kind")
    if kind not in KINDS:
        raise RuleTableError(f"{path.name}: unknown kind {kind!r}; use one of {', '.join(KINDS)}")
    rows = data.get("rule", [])
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise RuleTableError(
            f"{path.name}: 'rule' must be a list of [[rule]] tables, not {rows!r:.40}; fix the table"
        )
    settings = {key: value for key, value in data.items() if key not in ("kind", "rule")}
    return kind, [_rule_from_row(row, kind, path.name) for row in rows], settings


LAYOUT_TABLE = "layout.toml"  # the downstream's layout map (sync/layout.py): not a rule table


def rule_table_files(directory: Path) -> list[Path]:
    """The rule tables of ``directory``: every ``*.toml`` except the layout map."""
    return sorted(p for p in directory.glob("*.toml") if p.name != LAYOUT_TABLE)


def load_rules(directory: Path | None = None) -> RuleSet:
    """Load every ``*.toml`` table under ``directory`` (default: the repository's ``translations/``).

    A folder holding only a layout map (a downstream that uses the packaged rules) gives the packaged rules.
    """
    directory = Path(directory) if directory is not None else DEFAULT_DIRECTORY
    files = rule_table_files(directory)
    if not files and (directory / LAYOUT_TABLE).is_file():
        directory = DEFAULT_DIRECTORY
        files = rule_table_files(directory)
    if not files:
        raise RuleTableError(f"{directory}: no *.toml rule tables found; pass the translations directory")
    digest = hashlib.sha256()
    rules: list[Rule] = []
    settings: dict[str, dict[str, Any]] = {}
    seen: dict[str, str] = {}
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        kind, table_rules, table_settings = read_table(path)
        settings.setdefault(kind, {}).update(table_settings)
        for rule in table_rules:
            if rule.id in seen:
                raise RuleTableError(
                    f"{path.name}: duplicate rule id {rule.id!r} (also in {seen[rule.id]}); rename one"
                )
            seen[rule.id] = path.name
            rules.append(rule)
    return RuleSet(rules=rules, hash=digest.hexdigest(), directory=directory, settings=settings)
