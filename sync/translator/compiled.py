"""Rule tables compiled into regexes and lookup maps, once per RuleSet (keyed by its hash).

Everything the passes ask — "what does this identifier become", "rewrite this sentence" — is
answered here, so the libcst passes stay small and the text files share the same rules.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from functools import cached_property

from sync.rules import Rule, RuleSet
from sync.translator.textrules import TextRules
from sync.translator.triggers import Triggers

# What counts as an SGLang reference when scanning translated text.
SGLANG_REFERENCE = re.compile(r"sglang|SGLang|Sglang|SGLANG", re.IGNORECASE)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\Z")


def _part_regex(word: str) -> re.Pattern[str]:
    """``word`` as one word of an identifier: bounded by ``_``, case changes or the ends."""
    if word.islower():
        return re.compile(r"(?<![a-z0-9])" + re.escape(word) + r"(?![a-z0-9])")
    if word.isupper():
        return re.compile(r"(?<![A-Za-z0-9])" + re.escape(word) + r"(?![A-Za-z0-9])")
    # CamelCase: a word starts after a lower-case letter too (FakeSGLang, TestSglangConfig)
    return re.compile(r"(?<![A-Z0-9])" + re.escape(word) + r"(?![a-z0-9])")


def flag_dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


@dataclass
class CompiledRules(TextRules, Triggers):
    rules: RuleSet
    _cache: dict[str, object] = field(default_factory=dict)

    # --- identifiers --------------------------------------------------------------------------
    @cached_property
    def exact_names(self) -> dict[str, Rule]:
        names = {
            rule.from_: rule for rule in self.rules.of_kind("name") if rule.extra.get("match") == "exact"
        }
        for rule in self.flag_rules.values():
            names.setdefault(flag_dest(rule.from_), rule)
        return names

    @cached_property
    def part_names(self) -> list[tuple[Rule, re.Pattern[str]]]:
        rules = [rule for rule in self.rules.of_kind("name") if rule.extra.get("match") == "part"]
        return [(rule, _part_regex(rule.from_)) for rule in rules]

    @cached_property
    def keep_references(self) -> list[tuple[Rule, re.Pattern[str]]]:
        return [(rule, re.compile(rule.from_)) for rule in self.rules.of_kind("reference")]

    def is_kept(self, text: str) -> Rule | None:
        for rule, regex in self.keep_references:
            if regex.search(text):
                return rule
        return None

    def rename_identifier(self, name: str) -> tuple[str, Rule | None]:
        """The new identifier and the rule behind it (``name`` unchanged and the rule if it leaves code)."""
        rule = self.exact_names.get(name)
        if rule is not None:
            if rule.leaves_code:
                return name, rule
            if rule.kind == "string":  # a flag rule: rename the argparse dest
                return flag_dest(rule.to), rule
            return rule.to, rule
        if not SGLANG_REFERENCE.search(name) or self.is_kept(name):
            return name, None
        new, used = name, None
        for rule, regex in self.part_names:
            new, count = regex.subn(rule.to, new)
            if count and used is None:
                used = rule
        return new, used

    @cached_property
    def kwargs(self) -> dict[str, Rule]:
        return {rule.from_: rule for rule in self.rules.of_kind("kwarg")}

    # --- strings by role ----------------------------------------------------------------------
    def _strings(self, role: str) -> list[Rule]:
        return [rule for rule in self.rules.of_kind("string") if rule.role == role]

    @cached_property
    def flag_rules(self) -> dict[str, Rule]:
        return {rule.from_: rule for rule in self._strings("flag") if rule.extra.get("match") != "prefix"}

    @cached_property
    def flag_prefix_rule(self) -> Rule | None:
        return next((r for r in self._strings("flag") if r.extra.get("match") == "prefix"), None)

    def map_flag(self, flag: str) -> tuple[str, Rule | None]:
        if flag == "--sglang" and self.flag_prefix_rule is not None:  # "the --sglang prefix"
            return self.flag_prefix_rule.to.rstrip("-"), self.flag_prefix_rule
        rule = self.flag_rules.get(flag)
        if rule is None:
            rule = self.flag_prefix_rule
            if rule is None or not flag.startswith(rule.from_):
                return flag, None
            return rule.to + flag[len(rule.from_) :], rule
        return (flag, rule) if rule.leaves_code else (rule.to, rule)

    @cached_property
    def endpoints(self) -> dict[str, Rule]:
        return {rule.from_: rule for rule in self._strings("endpoint")}

    @cached_property
    def endpoint_regex(self) -> re.Pattern[str] | None:
        froms = sorted(self.endpoints, key=len, reverse=True)
        if not froms:
            return None
        return re.compile(r"(?<![\w/.-])(" + "|".join(re.escape(f) for f in froms) + r")(?![\w-])")

    @cached_property
    def endpoint_callers(self) -> frozenset[str]:
        return frozenset(self.rules.settings.get("string", {}).get("endpoint_callers", ()))

    @cached_property
    def payload_markers(self) -> frozenset[str]:
        return frozenset(self.rules.settings.get("string", {}).get("payload_marker_keys", ()))

    @cached_property
    def url_wrappers(self) -> dict[str, int]:
        """``[[http_wrapper]]`` helpers called with a URL first: name -> index of their body argument."""
        rows = self.rules.settings.get("string", {}).get("http_wrapper", ())
        return {
            str(row["name"]): int(row["body_arg"])
            for row in rows
            if row.get("url_arg") == 0 and row.get("body_arg") is not None
        }

    @cached_property
    def payload_variables(self) -> frozenset[str]:
        return frozenset(self.rules.settings.get("string", {}).get("payload_variables", ()))

    @cached_property
    def fields(self) -> dict[str, list[Rule]]:
        table: dict[str, list[Rule]] = {}
        for rule in self._strings("field"):
            table.setdefault(rule.from_, []).append(rule)
        return table

    def field_rule(self, key: str, path: str, in_payload: bool) -> Rule | None:
        for rule in self.fields.get(key, ()):
            if not rule.applies_to(path):
                continue
            if rule.extra.get("context") == "payload" and not in_payload:
                continue
            return rule
        return None

    @cached_property
    def env_rules(self) -> tuple[dict[str, Rule], list[Rule]]:
        exact, globs = {}, []
        for rule in self._strings("env"):
            (globs.append(rule) if rule.extra.get("match") == "glob" else exact.__setitem__(rule.from_, rule))
        return exact, globs

    def env_rule(self, name: str) -> Rule | None:
        exact, globs = self.env_rules
        if name in exact:
            return exact[name]
        return next((rule for rule in globs if fnmatch.fnmatchcase(name, rule.from_)), None)

    def map_dotted_string(self, value: str) -> tuple[str, Rule | None]:
        """A dotted path in a string (``"slime.rollout.sglang_rollout.generate_rollout"``)."""
        if not _DOTTED.match(value):
            return value, None
        new, rule = self.rules.map_dotted(value)
        if rule is None:
            return value, None
        if new is None:
            return value, rule
        head, _, last = new.rpartition(".")
        renamed, _ = self.rename_identifier(last) if self.rules.is_first_party(rule) else (last, None)
        return f"{head}.{renamed}", rule

    @staticmethod
    def is_identifier(value: str) -> bool:
        return bool(_IDENTIFIER.match(value))


_COMPILED: dict[str, CompiledRules] = {}


def compiled(rules: RuleSet) -> CompiledRules:
    """One CompiledRules per table hash (tables are data; compile them once per process)."""
    found = _COMPILED.get(rules.hash)
    if found is None or found.rules is not rules:
        found = _COMPILED[rules.hash] = CompiledRules(rules)
    return found
