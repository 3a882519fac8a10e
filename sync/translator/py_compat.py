"""Plugin files keep slime's SGLang HTTP idiom and call it through ``vime.compat``.

A custom generate or rollout function written against SGLang (``{"text" | "input_ids",
"return_logprob"}`` posted to ``/generate``, ``output["meta_info"]["output_token_logprobs"]`` read
back) is not rewritten call by call: its ``post`` import is pointed at an adapter that speaks vLLM
on the wire and answers in SGLang's shape, and the response-shape rules stay out of the file. The
table ``translations/plugin_idioms.toml`` says which files are plugins (``compat_files``), which
import moves where, and which shape rules it replaces.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

import libcst as cst

from sync.rules import Rule, RuleSet
from sync.translator.cst_base import PassContext, RecordingTransformer
from sync.translator.py_imports import dotted_name, dotted_node

IMPORT_RULE = "compat.http_post"


@dataclass(frozen=True)
class CompatScope:
    files: tuple[str, ...]  # upstream path globs of plugin files
    rule: Rule | None  # the import rule (module, target, names)
    replaced: frozenset[str]  # shape rule ids that do not run (nor scan) in plugin files

    def covers(self, path: str) -> bool:
        return self.rule is not None and any(fnmatch.fnmatchcase(path, glob) for glob in self.files)


_SCOPES: dict[str, CompatScope] = {}


def compat_scope(rules: RuleSet) -> CompatScope:
    """The plugin scope of a rule set (computed once per table hash)."""
    found = _SCOPES.get(rules.hash)
    if found is None:
        found = _SCOPES[rules.hash] = _scope(rules)
    return found


def _scope(rules: RuleSet) -> CompatScope:
    settings = rules.settings.get("shape", {})
    rule = next((r for r in rules.of_kind("shape") if r.id == IMPORT_RULE), None)
    return CompatScope(
        files=tuple(settings.get("compat_files", ())),
        rule=rule,
        replaced=frozenset(settings.get("compat_replaces", ())),
    )


class CompatPass(RecordingTransformer):
    """``from slime.utils.http_utils import post`` -> ``from vime.compat.slime_http import post``."""

    def __init__(self, context: PassContext) -> None:
        super().__init__(context)
        self.rule = compat_scope(context.rules.rules).rule

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom) -> cst.ImportFrom:
        rule = self.rule
        if rule is None or updated_node.relative or updated_node.module is None:
            return updated_node
        if dotted_name(updated_node.module) != rule.extra["module"]:
            return updated_node
        if isinstance(updated_node.names, cst.ImportStar):
            self.hit(original_node, rule)
            return updated_node
        names = {dotted_name(alias.name) for alias in updated_node.names}
        if not names & {"post"}:
            return updated_node  # no generate call through this import: the module rules map it
        if not names <= set(rule.extra["names"]):
            self.hit(original_node, rule)  # a name the adapter does not offer: left for review
            return updated_node
        self.applied(original_node, rule)
        return updated_node.with_changes(module=dotted_node(rule.extra["target"]))
