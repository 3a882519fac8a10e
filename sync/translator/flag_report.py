"""Launch flags the translation left: which ``--sglang-*`` flag a hit is about, and what to use.

A hit names a rule and a line; a line of a launch script may carry several flags. These helpers
name the flags of the hit's rule on that line, so ``vime-sync translate --stats`` and the gate
can say ``--sglang-ep-size`` rather than only ``flag.ep_size``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sync.translator.compiled import CompiledRules
from sync.translator.model import Hit

_SGLANG_FLAG = re.compile(r"(?<![\w-])--sglang-[a-z0-9][a-z0-9-]*")
_VALUE_AFTER = re.compile(r"(?:=|[ \t]+)(['\"]?)([\w.${}:/+-]+)\1")


@dataclass(frozen=True)
class LeftFlag:
    """An SGLang flag left in a translated file, with the rule that left it and that rule's note."""

    path: str
    line: int
    flag: str
    rule_id: str
    note: str

    def format(self) -> str:
        return f"{self.path}:{self.line}: {self.rule_id}: {self.flag} left as upstream wrote it: {self.note}"


def judge_flag(rules: CompiledRules, flag: str, after: str = "") -> tuple[str | None, str | None]:
    """(what ``flag`` becomes, None if it stays; the id of the rule behind it, None if no rule has
    it) — ``after``: the text that follows it on its line, which holds a value rule's value."""
    if flag in rules.value_flag_rules:
        value = _VALUE_AFTER.match(after)
        if value is not None:
            new, _value, rule = rules.map_flag_value(flag, value.group(2))
            if rule is None:
                return None, None
            return (None if rule.leaves_code else new), rule.id
    new, rule = rules.map_flag(flag)
    if rule is None:
        return None, None
    return (None if rule.leaves_code else new), rule.id


def flag_rule_id(rules: CompiledRules, flag: str, after: str = "") -> str | None:
    """The id of the rule that leaves ``flag``; None when the flag is translated (or no rule has it)."""
    new, rule_id = judge_flag(rules, flag, after)
    return rule_id if new is None else None


def left_flags(rules: CompiledRules, path: str, text: str) -> list[LeftFlag]:
    """Every ``--sglang-*`` flag in ``text`` that the rules leave, with its line (comments included:
    the caller decides what counts)."""
    found = []
    for number, line in enumerate(text.split("\n"), start=1):
        for match in _SGLANG_FLAG.finditer(line):
            rule_id = flag_rule_id(rules, match.group(0), line[match.end() :])
            if rule_id is not None:
                note = rules.rules.rule(rule_id).note
                found.append(LeftFlag(path, number, match.group(0), rule_id, note))
    return found


def sglang_flags(text: str) -> list[tuple[int, str, str]]:
    """``(line, flag, the rest of its line)`` for every ``--sglang-*`` token of ``text``."""
    return [
        (number, match.group(0), line[match.end() :])
        for number, line in enumerate(text.split("\n"), start=1)
        for match in _SGLANG_FLAG.finditer(line)
    ]


def flags_of_hit(rules: CompiledRules, hit: Hit, line: str | None = None) -> list[str]:
    """The flags on the hit's line that its rule leaves (empty: the hit is not about a flag).
    ``line``: the translated line in full (the hit's snippet is cut at 160 characters)."""
    text = hit.snippet if line is None else line
    return [
        match.group(0)
        for match in _SGLANG_FLAG.finditer(text)
        if flag_rule_id(rules, match.group(0), text[match.end() :]) == hit.rule_id
    ]
