"""String literals by role, and prose in comments and docstrings.

A literal's role decides its rule, never a blind replace: an exact payload field, an environment
variable, a bare route name passed to an endpoint caller, an identifier-shaped string
(``getattr(args, "sglang_x")``), a dotted module path, or — anything else — prose, which gets
the word-bounded text rules (endpoints inside URLs, flags, the engine's name).
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from sync.translator.cst_base import RecordingTransformer

_QUOTES = ('"""', "'''", '"', "'")


def split_simple_string(node: cst.SimpleString) -> tuple[str, str, str]:
    """(prefix+quote, body, quote) of a literal, without evaluating escapes."""
    value = node.value
    index = 0
    while value[index] not in "\"'":
        index += 1
    prefix = value[:index]
    for quote in _QUOTES:
        if value.startswith(quote, index):
            return prefix + quote, value[index + len(quote) : len(value) - len(quote)], quote
    raise ValueError(value)


class StringRolePass(RecordingTransformer):
    """Rewrites string literals and comments according to their role."""

    def __init__(self, context) -> None:
        super().__init__(context)
        self._payload_depth = 0
        self._caller_args: set[int] = set()  # id() of first args of endpoint callers

    # --- context: payload dicts and endpoint callers ------------------------------------------
    def visit_Dict(self, node: cst.Dict) -> None:
        if self._is_payload(node):
            self._payload_depth += 1

    def leave_Dict(self, original_node: cst.Dict, updated_node: cst.Dict) -> cst.Dict:
        if self._is_payload(original_node):
            self._payload_depth -= 1
        return updated_node

    def _is_payload(self, node: cst.Dict) -> bool:
        markers = self.rules.payload_markers
        for element in node.elements:
            key = getattr(element, "key", None)
            if isinstance(key, cst.SimpleString) and split_simple_string(key)[1] in markers:
                return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
        if name in self.rules.endpoint_callers and node.args:
            self._caller_args.add(id(node.args[0].value))

    # --- literals --------------------------------------------------------------------------------
    def leave_SimpleString(
        self, original_node: cst.SimpleString, updated_node: cst.SimpleString
    ) -> cst.BaseExpression:
        try:
            head, body, quote = split_simple_string(updated_node)
        except (ValueError, IndexError):
            return updated_node
        if "b" in head.lower():
            return updated_node
        new_body = self._rewrite_literal(original_node, body)
        if new_body is None or new_body == body:
            return updated_node
        return updated_node.with_changes(value=head + new_body + quote)

    def _rewrite_literal(self, node: cst.SimpleString, body: str) -> str | None:
        rules = self.rules
        if id(node) in self._caller_args:
            rule = rules.endpoints.get("/" + body)
            if rule is not None:
                return self._take(node, rule, body, rule.to.lstrip("/"))
        rule = rules.field_rule(body, self.context.path, self._payload_depth > 0)
        if rule is not None:
            return self._take(node, rule, body, rule.to)
        if body.startswith("SGLANG_") and rules.is_identifier(body):
            rule = rules.env_rule(body)
            if rule is not None:
                return self._take(node, rule, body, rule.to)
        if rules.is_identifier(body):
            new, rule = rules.rename_identifier(body)
            return self._take(node, rule, body, new) if rule is not None else None
        if "." in body and " " not in body:
            new, rule = rules.map_dotted_string(body)
            if rule is not None:
                return self._take(node, rule, body, new)
        return self._prose(node, body)

    def _take(self, node: cst.CSTNode, rule, old: str, new: str) -> str:
        if rule.leaves_code or new == old:
            if rule.leaves_code:
                self.hit(node, rule)
            return old
        self.applied(node, rule)
        return new

    def _prose(self, node: cst.CSTNode, body: str) -> str:
        new, applied, hits = self.rules.rewrite_text(body, "prose")
        for rule_id, offset in applied:
            self.applied(node, self.rules.rules.rule(rule_id), offset)
        for rule_id, offset in hits:
            self.hit(node, self.rules.rules.rule(rule_id), offset)
        return new

    def leave_FormattedStringText(
        self, original_node: cst.FormattedStringText, updated_node: cst.FormattedStringText
    ) -> cst.FormattedStringText:
        new = self._prose(original_node, updated_node.value)
        return updated_node if new == updated_node.value else updated_node.with_changes(value=new)

    def leave_Comment(self, original_node: cst.Comment, updated_node: cst.Comment) -> cst.Comment:
        if m.matches(updated_node, m.Comment(value=m.MatchRegex(r"#\s*(type:|noqa|pragma)"))):
            return updated_node
        new = self._prose(original_node, updated_node.value)
        return updated_node if new == updated_node.value else updated_node.with_changes(value=new)
