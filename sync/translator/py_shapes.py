"""Response shapes: SGLang's ``meta_info`` becomes vLLM's ``choices[0]``.

SGLang answers ``/generate`` with ``{"text", "meta_info": {"output_token_logprobs": [[logprob,
token_id, text], ...], "finish_reason": {"type": ...}, ...}}``; vLLM's token-in/token-out route with
``{"choices": [{"token_ids", "logprobs": {"content": [{"token_id", "logprob"}]}, "finish_reason"}]}``.
The meta dict maps to the choice dict; the access patterns slime uses are rewritten here, and any
other use of ``meta_info`` is reported (rule ``shape.meta_info_other``).
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from sync.translator.cst_base import RecordingTransformer


def _key(name: str) -> m.SubscriptElement:
    return m.SubscriptElement(
        slice=m.Index(value=m.SimpleString(value=m.MatchIfTrue(lambda v: v[1:-1] == name)))
    )


def _string(name: str) -> m.SimpleString:
    return m.SimpleString(value=m.MatchIfTrue(lambda v: v.strip("\"'") == name))


def _sub(value: cst.BaseExpression, key: str | int) -> cst.Subscript:
    index = cst.Integer(str(key)) if isinstance(key, int) else cst.SimpleString(f'"{key}"')
    return cst.Subscript(value=value, slice=[cst.SubscriptElement(slice=cst.Index(value=index))])


def _get(value: cst.BaseExpression, key: str, *default: cst.BaseExpression) -> cst.Call:
    args = [cst.Arg(cst.SimpleString(f'"{key}"'))] + [cst.Arg(d) for d in default]
    return cst.Call(func=cst.Attribute(value=value, attr=cst.Name("get")), args=args)


def _content(choice: cst.BaseExpression, via_get: bool) -> cst.BaseExpression:
    """The per-token entries ``{token_id, logprob}`` of a choice."""
    if not via_get:
        return _sub(_sub(choice, "logprobs"), "content")
    logprobs = cst.BooleanOperation(left=_get(choice, "logprobs"), operator=cst.Or(), right=cst.Dict([]))
    return cst.BooleanOperation(
        left=_get(cst.parse_expression(f"({cst.Module([]).code_for_node(logprobs)})"), "content"),
        operator=cst.Or(),
        right=cst.List([]),
    )


META = m.Subscript(slice=[_key("meta_info")])
PAIRS_SUB = m.Subscript(slice=[_key("output_token_logprobs")])
PAIRS_GET = m.Call(func=m.Attribute(attr=m.Name("get")), args=[m.Arg(value=_string("output_token_logprobs"))])
FINISH_TYPE = m.Subscript(value=m.Subscript(slice=[_key("finish_reason")]), slice=[_key("type")])
META_GET = m.Call(func=m.Attribute(attr=m.Name("get")), args=[m.Arg(value=_string("meta_info"))])


class ShapePass(RecordingTransformer):
    def _rule(self, rule_id: str):
        return self.rules.rules.rule(rule_id)

    # X["meta_info"] -> X["choices"][0];  X.get("meta_info") -> (X.get("choices") or [{}])[0]
    def leave_Subscript(
        self, original_node: cst.Subscript, updated_node: cst.Subscript
    ) -> cst.BaseExpression:
        if m.matches(updated_node, FINISH_TYPE):
            self.applied(original_node, self._rule("shape.finish_reason_type"))
            return updated_node.value
        if m.matches(updated_node, META):
            self.applied(original_node, self._rule("shape.meta_info_field"))
            return _sub(_sub(updated_node.value, "choices"), 0)
        if m.matches(updated_node, PAIRS_SUB):
            self.applied(original_node, self._rule("shape.output_token_logprobs"))
            return _pairs(_content(updated_node.value, via_get=False))
        return updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        func = updated_node.func
        if m.matches(updated_node, META_GET):
            self.applied(original_node, self._rule("shape.meta_info_field"))
            choices = cst.BooleanOperation(
                left=_get(func.value, "choices"),
                operator=cst.Or(),
                right=cst.List([cst.Element(cst.Dict([]))]),
            )
            return _sub(cst.parse_expression(f"({cst.Module([]).code_for_node(choices)})"), 0)
        if m.matches(updated_node, PAIRS_GET):
            self.applied(original_node, self._rule("shape.output_token_logprobs"))
            return _pairs(_content(func.value, via_get=True))
        # (M.get("finish_reason") or {}).get("type", D) -> M.get("finish_reason") or D
        if m.matches(
            updated_node,
            m.Call(
                func=m.Attribute(
                    value=m.BooleanOperation(
                        left=m.Call(
                            func=m.Attribute(attr=m.Name("get")), args=[m.Arg(value=_string("finish_reason"))]
                        )
                    ),
                    attr=m.Name("get"),
                ),
                args=[m.Arg(value=_string("type")), m.ZeroOrMore()],
            ),
        ):
            self.applied(original_node, self._rule("shape.finish_reason_type"))
            inner = func.value.left
            if len(updated_node.args) > 1:
                return cst.BooleanOperation(left=inner, operator=cst.Or(), right=updated_node.args[1].value)
            return inner
        return updated_node

    def leave_Dict(self, original_node: cst.Dict, updated_node: cst.Dict) -> cst.BaseExpression:
        updated_node = self._return_logprob(original_node, updated_node)
        return self._abort_body(original_node, updated_node)

    # {"sampling_params": sp, "return_logprob": True} -> {"sampling_params": {**sp, "logprobs": 0}}
    def _return_logprob(self, original_node: cst.Dict, node: cst.Dict) -> cst.Dict:
        elements = list(node.elements)
        flag = _index_of(elements, "return_logprob")
        params = _index_of(elements, "sampling_params")
        if (
            flag is None
            or params is None
            or not m.matches(elements[flag].value, m.Name("True") | m.Name("False"))
        ):
            return node
        if elements[flag].value.value == "True":
            value = elements[params].value
            entry = cst.DictElement(cst.SimpleString('"logprobs"'), cst.Integer("0"))
            if isinstance(value, cst.Dict) and value.elements:  # on the last entry's line: no new line
                last = value.elements[-1]
                glued = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                new_value = value.with_changes(
                    elements=[*value.elements[:-1], glued, entry.with_changes(comma=last.comma)]
                )
            elif isinstance(value, cst.Dict):
                new_value = value.with_changes(elements=[entry])
            else:
                new_value = cst.Dict([cst.StarredDictElement(value), entry])
            elements[params] = elements[params].with_changes(value=new_value)
        new_node = _drop_keeping_lines(node, elements, flag, RETURN_LOGPROB_NOTE)
        if _lines(new_node) != _lines(node):  # unusual layout: leave it (the field rule reports it)
            return node
        rule = self._rule("shape.return_logprob")
        target = original_node.elements[params]
        inner = target.value
        self.applied(inner.elements[-1] if isinstance(inner, cst.Dict) and inner.elements else target, rule)
        self.applied(original_node.elements[flag], rule)
        return new_node

    # {"rid": X} (the whole body of an abort) -> {"request_ids": [X]}
    def _abort_body(self, original_node: cst.Dict, updated_node: cst.Dict) -> cst.Dict:
        if len(updated_node.elements) != 1 or not m.matches(
            updated_node.elements[0], m.DictElement(key=_string("rid"))
        ):
            return updated_node
        element = updated_node.elements[0]
        self.applied(original_node, self._rule("shape.abort_rid"))
        new_element = element.with_changes(
            key=cst.SimpleString('"request_ids"'), value=cst.List([cst.Element(element.value)])
        )
        return updated_node.with_changes(elements=[new_element])

    # [item[1] for item in PAIRS] -> [item["token_id"] for item in CONTENT]
    def leave_ListComp(self, original_node: cst.ListComp, updated_node: cst.ListComp) -> cst.ListComp:
        source = updated_node.for_in.iter
        content = _unpairs(source)
        target = updated_node.for_in.target
        if content is None or not isinstance(target, cst.Name):
            return updated_node
        element = updated_node.elt.visit(_PairIndex(target.value))
        return updated_node.with_changes(elt=element, for_in=updated_node.for_in.with_changes(iter=content))

    # "output_token_logprobs" in M -> M.get("logprobs") is not None
    def leave_Comparison(
        self, original_node: cst.Comparison, updated_node: cst.Comparison
    ) -> cst.BaseExpression:
        if (
            m.matches(updated_node.left, _string("output_token_logprobs"))
            and len(updated_node.comparisons) == 1
            and isinstance(updated_node.comparisons[0].operator, cst.In)
        ):
            self.applied(original_node, self._rule("shape.output_token_logprobs"))
            choice = updated_node.comparisons[0].comparator
            return cst.Comparison(
                left=_get(choice, "logprobs"),
                comparisons=[cst.ComparisonTarget(operator=cst.IsNot(), comparator=cst.Name("None"))],
            )
        return updated_node


RETURN_LOGPROB_NOTE = 'vime-sync: return_logprob became sampling_params["logprobs"] = 0'


def _index_of(elements: list, key: str) -> int | None:
    return next((i for i, e in enumerate(elements) if m.matches(e, m.DictElement(key=_string(key)))), None)


def _lines(node: cst.CSTNode) -> int:
    return cst.Module([]).code_for_node(node).count("\n")


def _with_note(comma: cst.Comma, note: str) -> cst.Comma:
    """Add a comment line after the newline of ``comma`` (it takes the place of a removed line)."""
    space = comma.whitespace_after
    if not isinstance(space, cst.ParenthesizedWhitespace):
        return comma
    line = cst.EmptyLine(indent=space.indent, whitespace=space.last_line, comment=cst.Comment(f"# {note}"))
    return comma.with_changes(whitespace_after=space.with_changes(empty_lines=[*space.empty_lines, line]))


def _drop_keeping_lines(node: cst.Dict, elements: list, index: int, note: str) -> cst.Dict:
    """Remove one element; when it had a line of its own, a comment line takes its place."""
    elements = list(elements)
    removed = elements.pop(index)
    if index == len(elements) and elements:  # it was the last one
        previous = elements[-1]
        closing = node.rbrace.whitespace_before
        if (
            isinstance(previous.comma, cst.Comma)
            and isinstance(previous.comma.whitespace_after, cst.ParenthesizedWhitespace)
            and isinstance(closing, cst.ParenthesizedWhitespace)
            and closing.first_line.comment is None
        ):  # its line stays, holding the note
            first = closing.first_line.with_changes(comment=cst.Comment(f"# {note}"))
            rbrace = node.rbrace.with_changes(whitespace_before=closing.with_changes(first_line=first))
            return node.with_changes(elements=elements, rbrace=rbrace)
        elements[-1] = previous.with_changes(comma=removed.comma)
        return node.with_changes(elements=elements)
    ended_line = isinstance(removed.comma, cst.Comma) and isinstance(
        removed.comma.whitespace_after, cst.ParenthesizedWhitespace
    )
    if ended_line and index > 0 and isinstance(elements[index - 1].comma, cst.Comma):
        elements[index - 1] = elements[index - 1].with_changes(
            comma=_with_note(elements[index - 1].comma, note)
        )
    return node.with_changes(elements=elements)


def _pairs(content: cst.BaseExpression) -> cst.ListComp:
    """Rebuild SGLang's [[logprob, token_id], ...] pairs from vLLM's per-token entries."""
    return cst.parse_expression(
        f'[[entry["logprob"], entry["token_id"]] for entry in {cst.Module([]).code_for_node(content)}]'
    )


def _unpairs(expression: cst.BaseExpression) -> cst.BaseExpression | None:
    """The content expression inside a rebuilt pairs comprehension, or None."""
    if (
        isinstance(expression, cst.ListComp)
        and isinstance(expression.for_in.target, cst.Name)
        and expression.for_in.target.value == "entry"
        and m.matches(expression.elt, m.List([m.Element(m.Subscript()), m.Element(m.Subscript())]))
    ):
        return expression.for_in.iter
    return None


class _PairIndex(cst.CSTTransformer):
    """``item[0]`` → ``item["logprob"]``, ``item[1]`` → ``item["token_id"]`` for one loop variable."""

    def __init__(self, variable: str) -> None:
        super().__init__()
        self.variable = variable

    def leave_Subscript(
        self, original_node: cst.Subscript, updated_node: cst.Subscript
    ) -> cst.BaseExpression:
        if not m.matches(updated_node.value, m.Name(self.variable)) or len(updated_node.slice) != 1:
            return updated_node
        index = updated_node.slice[0].slice
        if (
            isinstance(index, cst.Index)
            and isinstance(index.value, cst.Integer)
            and index.value.value in "01"
        ):
            key = "logprob" if index.value.value == "0" else "token_id"
            return _sub(updated_node.value, key)
        return updated_node
