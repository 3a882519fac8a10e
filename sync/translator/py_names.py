"""Identifiers and attribute names: ``SGLangEngine``, ``sglang_url``, ``args.sglang_router_ip``.

Names bound by imports follow their module rule (the import pass renames the import itself);
names imported from modules that stay SGLang are protected, so code and import keep agreeing.
"""

from __future__ import annotations

import libcst as cst

from sync.translator.cst_base import RecordingTransformer


class NamePass(RecordingTransformer):
    def visit_Import(self, node: cst.Import) -> bool:
        return False  # the import pass owns import statements

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        value = updated_node.value
        bound = self.context.bindings.get(value)
        if bound is not None:
            new, rule = bound
            if new is None or rule is None:
                if rule is not None and rule.leaves_code:
                    self.hit(original_node, rule)
                return updated_node
            if new != value:
                self.applied(original_node, rule)
                return updated_node.with_changes(value=new)
            return updated_node
        new, rule = self.rules.rename_identifier(value)
        if rule is None:
            return updated_node
        if rule.leaves_code or new == value:
            if rule.leaves_code:
                self.hit(original_node, rule)
            return updated_node
        if new in self.context.taken:  # ``sglang_x`` beside an existing ``vllm_x``: left, and reported
            return updated_node
        self.applied(original_node, rule)
        return updated_node.with_changes(value=new)
