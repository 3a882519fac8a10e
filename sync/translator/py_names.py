"""Identifiers and attribute names: ``SGLangEngine``, ``sglang_url``, ``args.sglang_router_ip``.

Names bound by imports follow their module rule (the import pass renames the import itself);
names imported from modules that stay SGLang are protected, so code and import keep agreeing.
Where a statement also spells such a name as something else (a parameter, a keyword, an attribute,
a local), the caller passes ``import_uses``: the nodes that scope analysis found to be the import.
"""

from __future__ import annotations

import libcst as cst

from sync.translator.cst_base import PassContext, RecordingTransformer


class NamePass(RecordingTransformer):
    def __init__(
        self, context: PassContext, scoped: frozenset[str] = frozenset(), import_uses: set[int] | None = None
    ) -> None:
        """``scoped``: the bound names resolved by scope analysis; ``import_uses``: ``id``s of the
        nodes that are uses of their import. Every spelling of any other bound name is its use."""
        super().__init__(context)
        self.scoped = scoped
        self.import_uses = import_uses or set()

    def visit_Import(self, node: cst.Import) -> bool:
        return False  # the import pass owns import statements

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        value = updated_node.value
        bound = self.context.bindings.get(value)
        if bound is not None and (value not in self.scoped or id(original_node) in self.import_uses):
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
