"""Rule tables compiled into regexes and lookup maps, once per RuleSet (keyed by its hash).

Everything the passes ask — "what does this identifier become", "rewrite this sentence" — is
answered here, so the libcst passes stay small and the text files share the same rules.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from dataclasses import dataclass, field
from functools import cached_property

from sync.rules import Rule, RuleSet
from sync.translator.target_flags import VIME_TARGET, installed_serve_options, passes_through
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


_UNSET: frozenset[str] = frozenset({"<unset>"})


@dataclass
class CompiledRules(TextRules, Triggers):
    rules: RuleSet
    _cache: dict[str, object] = field(default_factory=dict)
    # the installed vLLM's `vllm serve` options (None: vLLM not importable, targets unchecked);
    # read on first use unless given (a test of another vLLM release)
    serve_options: frozenset[str] | None = _UNSET

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
        if rule is None and name.startswith("sglang_"):
            rule = self._pattern_flag_rule("--" + name.replace("_", "-"))
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
        """Flag rules for one flag each (no ``match``); ``match = "regex"`` rows are flag_patterns."""
        return {rule.from_: rule for rule in self._strings("flag") if "match" not in rule.extra}

    @cached_property
    def flag_patterns(self) -> list[tuple[Rule, re.Pattern[str]]]:
        return [
            (rule, re.compile(rule.from_))
            for rule in self._strings("flag")
            if rule.extra.get("match") == "regex"
        ]

    @cached_property
    def flag_prefix_rule(self) -> Rule | None:
        return next((r for r in self._strings("flag") if r.extra.get("match") == "prefix"), None)

    @cached_property
    def flag_fallback_rule(self) -> Rule | None:
        """What reports a flag whose ``--vllm-*`` target vLLM lacks (``flag.not_in_vllm``)."""
        return next((r for r in self._strings("flag") if r.extra.get("match") == "fallback"), None)

    @cached_property
    def value_flag_rules(self) -> dict[str, Rule]:
        """Flag rules with a ``values`` table: they map only together with a value they list."""
        return {flag: rule for flag, rule in self.flag_rules.items() if "values" in rule.extra}

    def _pattern_flag_rule(self, flag: str) -> Rule | None:
        return next((rule for rule, regex in self.flag_patterns if regex.fullmatch(flag)), None)

    def flag_rule(self, flag: str) -> Rule | None:
        """The rule of one flag (exact, then ``match = "regex"``); None: the prefix rule's business."""
        return self.flag_rules.get(flag) or self._pattern_flag_rule(flag)

    def vllm_options(self) -> frozenset[str] | None:
        if self.serve_options is _UNSET:
            self.serve_options = installed_serve_options()
        return self.serve_options

    def target_exists(self, target: str, rule: Rule) -> bool:
        """Is ``target`` a flag vime accepts? ``--vllm-*`` targets must be in the installed vLLM's
        ``vllm serve`` (unchecked without vLLM); vime's own targets are checked by ``rules check``."""
        if rule.extra.get("target") == VIME_TARGET:
            return True
        options = self.vllm_options()
        if options is None:
            return True
        managed = self.flag_prefix_rule.extra.get("managed", ()) if self.flag_prefix_rule else ()
        return passes_through(target, options, managed)

    def left(self, rule: Rule) -> Rule:
        """``rule`` as one that leaves the code (a hit, reported): a value it has no mapping for."""
        key = "left:" + rule.id
        if key not in self._cache:
            self._cache[key] = dataclasses.replace(rule, status="unsupported")
        return self._cache[key]  # type: ignore[return-value]

    def _not_mapped(self, flag: str) -> tuple[str, Rule | None]:
        return flag, self.flag_fallback_rule  # no fallback row: the flag is listed as unmapped

    def map_flag(self, flag: str) -> tuple[str, Rule | None]:
        """The flag's translation and its rule; a rule that leaves the code gives the flag back.

        A ``--vllm-*`` target the installed vLLM lacks is never written: the flag stays and the
        fallback rule reports it. A rule with ``values`` maps only with its value (map_flag_value).
        """
        prefix = self.flag_prefix_rule
        if flag == "--sglang" and prefix is not None:  # "the --sglang prefix"
            return prefix.to.rstrip("-"), prefix
        rule = self.flag_rule(flag)
        if rule is not None:
            if rule.leaves_code:
                return flag, rule
            if flag in self.value_flag_rules:
                return flag, self.left(rule)
            return (rule.to, rule) if self.target_exists(rule.to, rule) else self._not_mapped(flag)
        if prefix is None or not flag.startswith(prefix.from_):
            return flag, None
        target = prefix.to + flag[len(prefix.from_) :]
        return (target, prefix) if self.target_exists(target, prefix) else self._not_mapped(flag)

    def map_flag_definition(self, flag: str) -> tuple[str, Rule | None]:
        """A flag as an argument definition names it (``add_argument("--sglang-x", ...)``): the
        translated parser defines the target itself, so it maps by name, unchecked and without a
        value, as ``args.<dest>`` does (``rename_identifier``)."""
        rule = self.flag_rule(flag)
        if rule is not None:
            return (flag, rule) if rule.leaves_code else (rule.to, rule)
        prefix = self.flag_prefix_rule
        if prefix is None or not flag.startswith(prefix.from_):
            return flag, None
        return prefix.to + flag[len(prefix.from_) :], prefix

    def map_flag_value(self, flag: str, value: str) -> tuple[str, str, Rule | None]:
        """A flag of ``value_flag_rules`` with its value: both mapped, or both left with the rule
        that reports them (the rule itself for a value its table lacks)."""
        rule = self.value_flag_rules[flag]
        mapped = rule.extra["values"].get(value)
        if mapped is None:
            return flag, value, self.left(rule)
        if not self.target_exists(rule.to, rule):
            return flag, value, self.flag_fallback_rule
        return rule.to, str(mapped), rule

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
