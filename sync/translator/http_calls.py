"""Calls whose route an endpoint rule renames, reshaped the way the vLLM route wants them.

An endpoint rule (``translations/strings.toml``, role ``endpoint``) may say more than the new
route, because vLLM's route can differ in how it is called:

- ``method = "POST"``: the HTTP verb (``requests.get(".../flush_cache")`` → ``requests.post``);
- ``body_wrap = "init_info"``: the body is embedded under one key (``{"init_info": {...}}``);
- ``body_add = {method = "reload_weights"}``: constant keys added beside the wrapped body;
- ``body_rename = {dtypes = "dtype_names"}``: keys of a literal body renamed;
- ``body_drop_keys = ["abort_all"]``: keys vLLM does not take, removed from a one-line literal body
  (a multi-line one would lose lines: it is left, and the conformance check reports the key);
- ``body_to_query = ["tags"]``: list-valued keys sent as repeated query parameters instead;
- ``body_drop = true``: the route takes no body.

Two call shapes are reshaped: ``X.get|post(url, json=body)`` with the route in the URL literal,
and endpoint callers (``self._make_request("name", body)``). Every rewrite stays on the lines of
the original call (no pass adds lines).
"""

from __future__ import annotations

import libcst as cst

from sync.rules import Rule

VERBS = ("get", "post", "put", "delete", "patch")
SHAPE_KEYS = (
    "method",
    "body_wrap",
    "body_add",
    "body_rename",
    "body_drop_keys",
    "body_to_query",
    "body_drop",
)


def reshapes(rule: Rule) -> bool:
    return any(key in rule.extra for key in SHAPE_KEYS)


def _string(value: str) -> cst.SimpleString:
    return cst.SimpleString('"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"')


def _literal(value: object) -> cst.BaseExpression:
    if isinstance(value, bool):
        return cst.Name("True" if value else "False")
    if isinstance(value, int | float):
        return cst.Integer(str(value)) if isinstance(value, int) else cst.Float(repr(value))
    return _string(str(value))


def _key(element: cst.BaseDictElement) -> str | None:
    if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString):
        value = element.key.evaluated_value
        return value if isinstance(value, str) else None
    return None


def new_body(rule: Rule, body: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """The body the vLLM route takes, built around the upstream one (None: send no body)."""
    if rule.extra.get("body_drop"):
        return None
    renames = rule.extra.get("body_rename", {})
    if renames and isinstance(body, cst.Dict):
        elements = []
        for element in body.elements:
            key = _key(element)
            if key in renames and isinstance(element, cst.DictElement):
                element = element.with_changes(key=_string(renames[key]))
            elements.append(element)
        body = body.with_changes(elements=elements)
    dropped = set(rule.extra.get("body_drop_keys", ()))
    if dropped and isinstance(body, cst.Dict) and "\n" not in cst.Module([]).code_for_node(body):
        kept = [element for element in body.elements if _key(element) not in dropped]
        if kept:
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        body = body.with_changes(elements=kept)
    wrap = rule.extra.get("body_wrap")
    adds = rule.extra.get("body_add", {})
    if not wrap and not adds:
        return body
    elements: list[cst.BaseDictElement] = [
        cst.DictElement(_string(key), _literal(value)) for key, value in adds.items()
    ]
    if wrap and body is not None:
        elements.append(cst.DictElement(_string(wrap), body))
    elif body is not None:
        elements.append(cst.StarredDictElement(body))
    return cst.Dict(elements)


def query_from_body(
    rule: Rule, body: cst.BaseExpression | None
) -> list[tuple[str, cst.BaseExpression]] | None:
    """``(key, list expression)`` pairs when every key of a literal body goes to the query string."""
    keys = set(rule.extra.get("body_to_query", ()))
    if not keys or not isinstance(body, cst.Dict):
        return None
    pairs = []
    for element in body.elements:
        key = _key(element)
        if key not in keys or not isinstance(element, cst.DictElement):
            return None
        pairs.append((key, element.value))
    return pairs


def query_route(route: str, pairs: list[tuple[str, cst.BaseExpression]]) -> cst.BaseExpression:
    """``f"wake_up?{'&'.join('tags=' + str(v) for v in (tags or []))}"`` for a bare route name."""
    parts: list[cst.BaseFormattedStringContent] = [cst.FormattedStringText(route + "?")]
    for index, (key, value) in enumerate(pairs):
        if index:
            parts.append(cst.FormattedStringText("&"))
        joined = cst.parse_expression(f"'&'.join('{key}=' + str(v) for v in (__VALUE__ or []))")
        joined = joined.visit(_Substitute(value))
        parts.append(cst.FormattedStringExpression(joined))
    return cst.FormattedString(parts=parts, start='f"', end='"')


class _Substitute(cst.CSTTransformer):
    def __init__(self, value: cst.BaseExpression) -> None:
        self.value = value

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self.value if updated_node.value == "__VALUE__" else updated_node
