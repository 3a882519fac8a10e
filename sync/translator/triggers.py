"""Cheap questions asked before any libcst work: could a rule act on this text at all?

libcst visits cost more than anything else in the translator, so each pass first asks these
regexes whether a statement's text gives it anything to do. A mixin of CompiledRules.
"""

from __future__ import annotations

import re
from functools import cached_property


class Triggers:
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
            r"\bsgl-",
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
