"""Rule tables compiled into regexes and lookup maps, once per RuleSet (keyed by its hash).

Everything the passes ask — "what does this identifier become", "rewrite this sentence" — is
answered here, so the libcst passes stay small and the text files share the same rules.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from sync.rules import Rule, RuleSet

# What counts as an SGLang reference when scanning translated text.
SGLANG_REFERENCE = re.compile(r"sglang|SGLang|Sglang|SGLANG", re.IGNORECASE)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\Z")
_FLAG = re.compile(r"(?<!\w)--sglang(?:-[a-z0-9][a-z0-9-]*|-|(?![\w-]))")
_PATH_IN_TEXT = re.compile(r"(?<![\w/.:$-])(?:[\w.-]+/)+[\w.-]*(?i:sglang)[\w.-]*")
_MD_LINK = re.compile(r"\]\((?!https?:|mailto:)([^)\s#]*)(#[^)\s]*)?\)")
_ENV = re.compile(r"(?<![\w])SGLANG_[A-Z0-9_]+")
_DOTTED_IN_TEXT = re.compile(r"(?<![\w.])(?:slime|slime_plugins|sglang\w*)(?:\.[A-Za-z_]\w*)+")
_IDENT_IN_TEXT = re.compile(r"(?<![\w-])\w*(?i:sglang)\w*(?![\w-])")

Edit = tuple[str, int]  # (rule id, 0-based line offset inside the rewritten text)


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
class Substitution:
    rule: Rule
    regex: re.Pattern[str]
    replace: Callable[[re.Match[str]], str | None]  # None: leave the match (unsupported)


@dataclass
class CompiledRules:
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
        renamed, _ = self.rename_identifier(last) if rule.to.startswith("vime") else (last, None)
        return f"{head}.{renamed}", rule

    # --- prose and text -------------------------------------------------------------------------
    def text_substitutions(self, context: str) -> list[Substitution]:
        key = "subs:" + context
        if key not in self._cache:
            self._cache[key] = self._build_substitutions(context)
        return self._cache[key]  # type: ignore[return-value]

    def _build_substitutions(self, context: str) -> list[Substitution]:
        subs: list[Substitution] = []
        if context == "markdown":
            subs.append(Substitution(self._link_marker, _MD_LINK, self._replace_link))
        if context in ("markdown", "prose", "code"):
            subs.append(Substitution(self._path_marker, _PATH_IN_TEXT, self._replace_path))
        if self.endpoint_regex is not None:
            subs.append(Substitution(self._endpoint_marker, self.endpoint_regex, self._replace_endpoint))
        subs.append(Substitution(self._flag_marker, _FLAG, self._replace_flag))
        subs.append(Substitution(self._env_marker, _ENV, self._replace_env))
        if context != "requirements":
            subs.append(Substitution(self._dotted_marker, _DOTTED_IN_TEXT, self._replace_dotted))
            subs.append(Substitution(self._identifier_marker, _IDENT_IN_TEXT, self._replace_identifier))
        for rule in self.rules.of_kind("text"):
            if context in rule.extra.get("contexts", ()):
                to = rule.to
                subs.append(
                    Substitution(
                        rule,
                        re.compile(rule.from_),
                        (lambda m, to=to: None) if rule.leaves_code else (lambda m, to=to: to),
                    )
                )
        return subs

    # Marker rules: the real rule of a match is looked up per match (one regex for many rules).
    _endpoint_marker = Rule("string.endpoint", "string", "", "", "full", "")
    _flag_marker = Rule("string.flag", "string", "", "", "full", "")
    _env_marker = Rule("string.env", "string", "", "", "full", "")
    _dotted_marker = Rule("module.dotted", "module", "", "", "full", "")
    _link_marker = Rule("path.link", "path", "", "", "full", "")
    _path_marker = Rule("path.text", "path", "", "", "full", "")

    def _replace_path(self, match: re.Match[str]) -> str | None:
        new, rules = self.rules.map_path_with_rules(match.group(0))
        return None if not rules or new is None else new

    def _map_link(self, match: re.Match[str]) -> tuple[str, Rule | None]:
        """A relative Markdown link follows the path rules; its anchor follows the translated heading."""
        target, anchor = match.group(1), match.group(2) or ""
        new_target, path_rules = self.rules.map_path_with_rules(target) if target else (target, [])
        new_anchor, anchor_rule = self.rules.rename_parts(anchor) if anchor else (anchor, None)
        rule = path_rules[0] if path_rules else anchor_rule
        return f"]({new_target or target}{new_anchor})", rule

    def _replace_link(self, match: re.Match[str]) -> str | None:
        new, rule = self._map_link(match)
        return None if rule is None else new

    _identifier_marker = Rule("name.identifier", "name", "", "", "full", "")

    def _replace_dotted(self, match: re.Match[str]) -> str | None:
        new, rule = self.map_dotted_string(match.group(0))
        return None if rule is None or rule.leaves_code else new

    def _replace_identifier(self, match: re.Match[str]) -> str | None:
        token = match.group(0)
        if token.lower() == "sglang" or (token.startswith("SGLANG_") and token.isupper()):
            return token  # the engine's name is prose; SGLANG_* are environment variables
        new, rule = self.rename_identifier(token)
        return None if rule is None or rule.leaves_code else new

    def _replace_endpoint(self, match: re.Match[str]) -> str | None:
        rule = self.endpoints[match.group(1)]
        return None if rule.leaves_code else rule.to

    def _replace_flag(self, match: re.Match[str]) -> str | None:
        new, rule = self.map_flag(match.group(0))
        return None if rule is None or rule.leaves_code else new

    def _replace_env(self, match: re.Match[str]) -> str | None:
        rule = self.env_rule(match.group(0))
        return None if rule is None or rule.leaves_code else rule.to

    def rule_of_match(self, sub: Substitution, match: re.Match[str]) -> Rule | None:
        if sub.rule is self._endpoint_marker:
            return self.endpoints[match.group(1)]
        if sub.rule is self._flag_marker:
            return self.map_flag(match.group(0))[1]
        if sub.rule is self._env_marker:
            return self.env_rule(match.group(0))
        if sub.rule is self._path_marker:
            return next(iter(self.rules.map_path_with_rules(match.group(0))[1]), None)
        if sub.rule is self._link_marker:
            return self._map_link(match)[1]
        if sub.rule is self._dotted_marker:
            return self.map_dotted_string(match.group(0))[1]
        if sub.rule is self._identifier_marker:
            return self.rename_identifier(match.group(0))[1]
        return sub.rule

    def rewrite_text(self, text: str, context: str) -> tuple[str, list[Edit], list[Edit]]:
        """Apply the text rules of ``context`` outside kept references.

        Returns the new text, the applied rules and the unsupported hits, each with the 0-based
        line offset (in ``text``) where it matched.
        """
        applied: list[Edit] = []
        hits: list[Edit] = []
        if not text:
            return text, applied, hits
        protected = self._protected_spans(text)
        for sub in self.text_substitutions(context):
            if not sub.regex.search(text):
                continue
            pieces: list[str] = []
            last = 0
            for match in sub.regex.finditer(text):
                if any(start <= match.start() < end for start, end in protected):
                    continue
                rule = self.rule_of_match(sub, match)
                if rule is None:
                    continue
                line = text.count("\n", 0, match.start())
                new = sub.replace(match)
                if new is None:
                    hits.append((rule.id, line))
                    continue
                if new == match.group(0):
                    continue
                pieces.append(text[last : match.start()])
                pieces.append(new)
                last = match.end()
                applied.append((rule.id, line))
            if pieces:
                pieces.append(text[last:])
                text = "".join(pieces)
                protected = self._protected_spans(text)
        return text, applied, hits

    def _protected_spans(self, text: str) -> list[tuple[int, int]]:
        if not SGLANG_REFERENCE.search(text) and "sgl" not in text:
            return []
        return [m.span() for _, regex in self.keep_references for m in regex.finditer(text)]

    # --- quick filters ----------------------------------------------------------------------------
    # libcst visits cost more than anything else here, so each pass first asks these regexes
    # whether a statement's text could give it anything to do.
    @cached_property
    def module_roots(self) -> re.Pattern[str]:
        roots = {rule.from_.split(".")[0] for rule in self.rules.of_kind("module")}
        return re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, roots))) + r")\b")

    @cached_property
    def import_trigger(self) -> re.Pattern[str]:
        return re.compile(r"\bimport\b")

    @cached_property
    def kwarg_trigger(self) -> re.Pattern[str] | None:
        words = sorted(self.kwargs)
        return re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\s*=") if words else None

    @cached_property
    def string_trigger(self) -> re.Pattern[str]:
        """A literal or comment some string/prose rule could act on."""
        quoted = set()
        for rule in self.rules.of_kind("string"):
            if rule.role in ("endpoint", "field"):
                quoted.add(rule.from_.lstrip("/"))
        alternatives = [
            r"(?i:sglang)",
            r"SGLANG_",
            r"""["'/](?:""" + "|".join(sorted(map(re.escape, quoted))) + r""")\b""",
            r"""\bslime(?:_plugins)?[./]""",
        ]
        return re.compile("|".join(alternatives))

    @cached_property
    def shape_trigger(self) -> re.Pattern[str]:
        return re.compile(
            r"""meta_info|output_token_logprobs|return_logprob|["']rid["']|finish_reason["'][^\n]*["']type["']"""
        )

    @cached_property
    def trigger(self) -> re.Pattern[str]:
        """Any token some rule could act on; a file without one is returned unchanged."""
        parts = [self.string_trigger.pattern, self.module_roots.pattern, self.shape_trigger.pattern]
        if self.kwarg_trigger is not None:
            parts.append(self.kwarg_trigger.pattern)
        return re.compile("|".join(f"(?:{part})" for part in parts))

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
