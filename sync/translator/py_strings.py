"""String literals by role, and prose in comments and docstrings.

A literal's role decides its rule, never a blind replace: an exact payload field, an environment
variable, a bare route name passed to an endpoint caller, an identifier-shaped string
(``getattr(args, "sglang_x")``), a dotted module path, or — anything else — prose, which gets
the word-bounded text rules (endpoints inside URLs, flags, the engine's name).
"""

from __future__ import annotations

import re

import libcst as cst
import libcst.matchers as m

from sync.translator.cst_base import RecordingTransformer
from sync.translator.http_calls import VERBS, new_body, query_from_body, query_route, reshapes

_QUOTES = ('"""', "'''", '"', "'")
# keywords of an argument definition (add_argument and helpers like it): its strings name flags
_DEFINITION_KEYWORDS = {"type", "default", "help", "action", "dest", "choices", "nargs", "const", "required"}
_FLAG_LITERAL = re.compile(r"--sglang-[a-z0-9][a-z0-9-]*")


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
        self._payload_keys: set[int] = set()  # id() of subscript keys of those names
        self._definition_args: set[int] = set()  # id() of positional arguments of argument definitions

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
        if name == "add_argument" or any(
            arg.keyword is not None and arg.keyword.value in _DEFINITION_KEYWORDS for arg in node.args
        ):
            self._definition_args |= {id(arg.value) for arg in node.args if arg.keyword is None}

    def visit_Subscript(self, node: cst.Subscript) -> None:
        """``payload["input_ids"] = ...``: a key of a variable the tables name as a request payload.

        The passes see one statement at a time, so the dict literal that made ``payload`` a payload
        is out of sight; ``payload_variables`` (strings.toml) names such variables instead.
        """
        if isinstance(node.value, cst.Name) and node.value.value in self.rules.payload_variables:
            for element in node.slice:
                if isinstance(element.slice, cst.Index):
                    self._payload_keys.add(id(element.slice.value))

    # --- calls whose vLLM route is called differently (http_calls) -------------------------------
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        rule = self._reshape_rule(original_node)
        if rule is None:
            return updated_node
        if self._is_caller(original_node):
            return self._reshape_caller(rule, updated_node)
        body_arg = self._url_wrapper_body(original_node)
        if body_arg is not None:
            return self._reshape_positional_body(rule, updated_node, body_arg)
        return self._reshape_verb_call(rule, updated_node)

    def _url_wrapper_body(self, node: cst.Call) -> int | None:
        """Index of the body argument when ``node`` calls an ``[[http_wrapper]]`` taking a URL first."""
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
        return self.rules.url_wrappers.get(name) if isinstance(name, str) else None

    def _is_caller(self, node: cst.Call) -> bool:
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
        return name in self.rules.endpoint_callers

    def _reshape_rule(self, node: cst.Call):
        if not node.args or node.args[0].keyword is not None:
            return None
        first = node.args[0].value
        rule = None
        if self._is_caller(node) and isinstance(first, cst.SimpleString):
            value = first.evaluated_value
            rule = self.rules.endpoints.get("/" + value) if isinstance(value, str) else None
        elif (
            (
                (isinstance(node.func, cst.Attribute) and node.func.attr.value in VERBS)
                or self._url_wrapper_body(node) is not None
            )
            and isinstance(first, cst.SimpleString | cst.FormattedString)
            and self.rules.endpoint_regex is not None
        ):
            match = self.rules.endpoint_regex.search(cst.Module([]).code_for_node(first))
            rule = self.rules.endpoints.get(match.group(1)) if match else None
        return rule if rule is not None and not rule.leaves_code and reshapes(rule) else None

    def _reshape_caller(self, rule, call: cst.Call) -> cst.Call:
        """A dropped body becomes ``None`` in place (deleting the argument would delete its line); a
        body over several lines is never dropped (the conformance check reports its keys instead)."""
        args = list(call.args)
        body = args[1].value if len(args) > 1 and args[1].keyword is None and args[1].star == "" else None
        if (
            body is not None
            and _spans_lines(body)
            and (new_body(rule, body) is None or query_from_body(rule, body))
        ):
            return call
        pairs = query_from_body(rule, body)
        if pairs is not None:
            args[0] = args[0].with_changes(value=query_route(rule.to.lstrip("/"), pairs))
            args[1] = args[1].with_changes(value=cst.Name("None"))
            return call.with_changes(args=args)
        reshaped = new_body(rule, body)
        if body is not None and reshaped is None:
            args[1] = args[1].with_changes(value=cst.Name("None"))
        elif body is not None and reshaped is not body:
            args[1] = args[1].with_changes(value=reshaped)
        elif body is None and reshaped is not None and len(args) == 1:
            comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            args = [args[0].with_changes(comma=comma), cst.Arg(reshaped)]
        return call.with_changes(args=args)

    def _reshape_positional_body(self, rule, call: cst.Call, index: int) -> cst.Call:
        """``await post(url, body)``: the body reshaped in place (never dropped: the helper needs it)."""
        args = list(call.args)
        if len(args) <= index or args[index].keyword is not None or args[index].star != "":
            return call
        reshaped = new_body(rule, args[index].value)
        if reshaped is None or reshaped is args[index].value:
            return call
        args[index] = args[index].with_changes(value=reshaped)
        return call.with_changes(args=args)

    def _reshape_verb_call(self, rule, call: cst.Call) -> cst.Call:
        func = call.func
        method = str(rule.extra.get("method", "")).lower()
        if method and isinstance(func, cst.Attribute) and func.attr.value != method:
            call = call.with_changes(func=func.with_changes(attr=cst.Name(method)))
        args = list(call.args)
        for index, arg in enumerate(args):
            if arg.keyword is None or arg.keyword.value != "json":
                continue
            if query_from_body(rule, arg.value) is not None:
                args[index] = arg.with_changes(keyword=cst.Name("params"))
            else:
                reshaped = new_body(rule, arg.value)
                if reshaped is None and _spans_lines(arg.value):
                    break  # dropping it would drop lines: left for the conformance check to report
                if reshaped is None:
                    args[index] = arg.with_changes(value=cst.Name("None"))  # keeps the line
                elif reshaped is not arg.value:
                    args[index] = arg.with_changes(value=reshaped)
            break
        else:
            reshaped = new_body(rule, None)
            if reshaped is not None and args:
                if args[-1].comma is cst.MaybeSentinel.DEFAULT:  # a trailing comma keeps its newline
                    args[-1] = args[-1].with_changes(
                        comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                    )
                args.append(cst.Arg(reshaped, keyword=cst.Name("json"), equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))))  # fmt: skip
        return call.with_changes(args=args)

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
        if id(node) in self._definition_args and _FLAG_LITERAL.fullmatch(body):
            new, rule = rules.map_flag_definition(body)
            return self._take(node, rule, body, new) if rule is not None else None
        in_payload = self._payload_depth > 0 or id(node) in self._payload_keys
        rule = rules.field_rule(body, self.context.path, in_payload)
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


def _spans_lines(node: cst.CSTNode) -> bool:
    return "\n" in cst.Module([]).code_for_node(node)
