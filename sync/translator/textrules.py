"""Word-bounded rewriting of text — prose in Python, Markdown, shell, YAML, Dockerfiles.

One regex per kind of token (endpoint, flag, environment variable, dotted path, identifier,
Markdown link, path) plus the ``text`` table's rules, applied in that order outside the spans a
``reference`` (keep) rule protects. A mixin of :class:`sync.translator.compiled.CompiledRules`,
whose lookups (endpoints, flags, identifiers) it uses.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from sync.rules import Rule

SGLANG_WORD = re.compile(r"sglang|SGLang|Sglang|SGLANG", re.IGNORECASE)
_FLAG = re.compile(r"(?<!\w)--sglang(?:-[a-z0-9][a-z0-9-]*|-|(?![\w-]))")
_PATH_IN_TEXT = re.compile(r"(?<![\w/.:$-])(?:[\w.-]+/)+[\w.-]*(?i:sglang)[\w.-]*")
_MD_LINK = re.compile(r"\]\((?!https?:|mailto:)([^)\s#]*)(#[^)\s]*)?\)")
_ENV = re.compile(r"(?<![\w])SGLANG_[A-Z0-9_]+")
_DOTTED_IN_TEXT = re.compile(r"(?<![\w.])(?:slime|slime_plugins|sglang\w*)(?:\.[A-Za-z_]\w*)+")
_IDENT_IN_TEXT = re.compile(r"(?<![\w-])\w*(?i:sglang)\w*(?![\w-])")
_VALUE = r"[\w.${}:/+-]"  # one character of a flag's literal value (or of a shell variable)

Edit = tuple[str, int]  # (rule id, 0-based line offset inside the rewritten text)


@dataclass
class Substitution:
    rule: Rule
    regex: re.Pattern[str]
    replace: Callable[[re.Match[str]], str | None]  # None: leave the match (unsupported)


class TextRules:
    """Text rewriting over the compiled tables (mixed into CompiledRules)."""

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
        if self.value_flag_rules:
            subs.append(
                Substitution(self._flag_value_marker, self._flag_value_regex(), self._replace_flag_value)
            )
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
    _flag_value_marker = Rule("string.flag_value", "string", "", "", "full", "")
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

    def _flag_value_regex(self) -> re.Pattern[str]:
        """A flag of a rule with a ``values`` table and the literal value after it (``--x v``,
        ``--x=v``, ``--x "v"``); a value that is another flag is no value."""
        key = "flag_value_regex"
        if key not in self._cache:
            flags = "|".join(re.escape(flag) for flag in sorted(self.value_flag_rules, key=len, reverse=True))
            self._cache[key] = re.compile(
                rf"(?<![\w-])(?P<flag>{flags})(?P<sep>=|[ \t]+)(?P<q>['\"]?)(?P<value>(?!-){_VALUE}+)(?P=q)(?!{_VALUE})"
            )
        return self._cache[key]  # type: ignore[return-value]

    def _replace_flag_value(self, match: re.Match[str]) -> str | None:
        flag, value, rule = self.map_flag_value(match["flag"], match["value"])
        if rule is None or rule.leaves_code:
            return None
        return f"{flag}{match['sep']}{match['q']}{value}{match['q']}"

    def _replace_env(self, match: re.Match[str]) -> str | None:
        rule = self.env_rule(match.group(0))
        return None if rule is None or rule.leaves_code else rule.to

    def rule_of_match(self, sub: Substitution, match: re.Match[str]) -> Rule | None:
        if sub.rule is self._endpoint_marker:
            return self.endpoints[match.group(1)]
        if sub.rule is self._flag_marker:
            return self.map_flag(match.group(0))[1]
        if sub.rule is self._flag_value_marker:
            return self.map_flag_value(match["flag"], match["value"])[2]
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
        if not text or not self.trigger.search(text):  # nothing any rule could act on
            return text, applied, hits
        spans_of = _SpansOfText(self._protected_spans)
        protected = spans_of(text, flags=False)
        flags_done = (
            False  # after the flag rules, a --sglang-* flag they left is one token: no later rule edits it
        )
        for sub in self.text_substitutions(context):
            if flags_done and sub.rule is not self._flag_marker:
                protected = spans_of(text, flags=True)
            flags_done = flags_done or sub.rule is self._flag_marker
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
                protected = spans_of(text, flags=False)
        return text, applied, hits

    def _protected_spans(self, text: str) -> list[tuple[int, int]]:
        if not SGLANG_WORD.search(text) and "sgl" not in text:
            return []
        return [m.span() for _, regex in self.keep_references for m in regex.finditer(text)]


class _SpansOfText:
    """The protected spans of the text being rewritten, computed once per version of the text (the
    substitutions after the flag rules ask for them again each, while most leave the text as it was)."""

    def __init__(self, protected_spans) -> None:
        self.protected_spans = protected_spans
        self.text: str | None = None
        self.found: dict[bool, list[tuple[int, int]]] = {}

    def __call__(self, text: str, *, flags: bool) -> list[tuple[int, int]]:
        if text is not self.text:
            self.text, self.found = text, {}
        if flags not in self.found:
            spans = self.protected_spans(text)
            self.found[flags] = spans + [m.span() for m in _FLAG.finditer(text)] if flags else spans
        return self.found[flags]
