"""Check call skeletons against the target API: one :class:`Finding` per mismatch.

Kinds (``model.FINDING_KINDS``): unknown route, wrong method, a body key the route reads from the
query string (or the reverse), a missing required field, an unknown field, a read of an answer
field the response model does not have, a router policy vllm-router does not know. Each finding
says what the server does with such a call (``effect``): rejects it (4xx), accepts it and ignores
the part (ignored), or answers while the code's read of the answer fails (read).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sync.conformance.model import Body, CallSkeleton, Effect, Finding
from sync.conformance.schema import Api, Operation

RuleAt = Callable[[int, int], str]  # (first line, last line) -> the rule that produced them


def _no_rule(_first: int, _last: int) -> str:
    return "conformance"


class _Checker:
    def __init__(self, api: Api, rule_at: RuleAt) -> None:
        self.api = api
        self.rule_at = rule_at
        self.findings: list[Finding] = []

    def add(self, call: CallSkeleton, line: int, kind: str, message: str, effect: Effect) -> None:
        first, last = (call.line, call.end_line) if line == call.line else (line, line)
        rule = self.rule_at(first, last)
        if rule == "conformance" and line != call.line:
            rule = self.rule_at(call.line, call.end_line)
        where = f"{call.method} {call.route}"
        self.findings.append(Finding(call.path, line, rule, kind, f"{where}: {message}", effect))

    def check(self, call: CallSkeleton) -> None:
        if not call.checkable or call.route is None:
            return
        template = self.api.match(call.route)
        if template is None:
            if call.engine:
                target = "vllm-router" if call.router else "vLLM"
                self.add(call, call.line, "unknown-route", f"{target} has no route {call.route}", "rejected")
            return
        operations = self.api.routes[template]
        op = operations.get(call.method)
        if op is None:
            allowed = ", ".join(sorted(operations))
            self.add(
                call, call.line, "wrong-method", f"{template} takes {allowed}, not {call.method}", "rejected"
            )
            return
        self.check_query(call, op)
        self.check_body(call, op)
        self.check_reads(call, op)

    def body_fields(self, op: Operation) -> tuple[dict[str, Any], set[str], bool] | None:
        if op.body is None:
            return None
        return self.api.fields(op.body.get("schema"))

    def check_query(self, call: CallSkeleton, op: Operation) -> None:
        fields = self.body_fields(op)
        for name, line in sorted(call.query.items()):
            if name in op.query:
                continue
            if fields is not None and name in fields[0]:
                self.add(call, line, "query-not-body", f"{name!r} belongs in the JSON body, not the query", "rejected"
                         if name in fields[1] else "ignored")  # fmt: skip
            elif op.source == "vllm":
                self.add(
                    call, line, "unknown-field", f"unknown query parameter {name!r} (ignored)", "ignored"
                )
        if not call.query_open:
            for name, required in sorted(op.query.items()):
                if required and name not in call.query:
                    self.add(
                        call, call.line, "missing-field", f"query parameter {name!r} is required", "rejected"
                    )

    def check_body(self, call: CallSkeleton, op: Operation) -> None:
        body = call.body
        if op.body is None:
            if body is not None:
                for key, line in sorted(body.lines.items()):
                    if key in op.query:
                        self.add(call, line, "body-not-query", f"{key!r} is read from the query string "
                                 f"(params=...), the JSON body is ignored", "ignored")  # fmt: skip
                    elif op.source == "vllm":
                        self.add(
                            call,
                            line,
                            "unknown-field",
                            f"the route takes no body; {key!r} is ignored",
                            "ignored",
                        )
            return
        if body is None:
            fields = self.body_fields(op)
            needed = sorted(fields[1]) if fields else []
            if op.body.get("required") or needed:
                what = f"; it needs {', '.join(needed)}" if needed else ""
                self.add(call, call.line, "missing-field", f"sends no JSON body{what}", "rejected")
            return
        self.check_object(call, body, op.body.get("schema"), (), op)

    def check_object(
        self,
        call: CallSkeleton,
        body: Body,
        schema: dict[str, Any] | None,
        prefix: tuple[str, ...],
        op: Operation,
    ) -> None:
        fields = self.api.fields(schema)
        if fields is None:
            return
        properties, required, closed = fields
        where = ".".join(prefix)
        inside = f" in {where}" if where else ""
        for key in sorted(body.keys):
            line = body.lines.get(key, call.line)
            if key in properties:
                nested = body.keys[key]
                if nested is not None:
                    self.check_object(call, nested, properties[key], (*prefix, key), op)
            elif not prefix and key in op.query:
                self.add(call, line, "body-not-query", f"{key!r} is read from the query string (params=...), "
                         "not the JSON body", "ignored")  # fmt: skip
            else:
                effect: Effect = "rejected" if closed else "ignored"
                names = sorted(required) + sorted(set(properties) - required)
                known = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
                self.add(call, line, "unknown-field", f"unknown field {key!r}{inside} "
                         f"({'rejected' if closed else 'ignored'}; the model has {known})", effect)  # fmt: skip
        if not body.open:
            for key in sorted(required - set(body.keys)):
                self.add(
                    call, call.line, "missing-field", f"required field {key!r}{inside} is missing", "rejected"
                )

    def check_reads(self, call: CallSkeleton, op: Operation) -> None:
        if op.response is None:
            return
        for read in call.reads:
            schema: dict[str, Any] | None = op.response
            for depth, key in enumerate(read.path):
                schema = self.api.child(schema, key)
                if schema is None:
                    shown = "".join(f"[{k!r}]" for k in read.path[: depth + 1])
                    what = {"in": "tests", "get": "reads (.get)", "subscript": "reads"}[read.how]
                    self.add(call, read.line, "response-field", f"{what} answer{shown}, which the response "
                             "model does not have", "read")  # fmt: skip
                    break


def check_calls(calls: list[CallSkeleton], api: Api, rule_at: RuleAt | None = None) -> list[Finding]:
    """Findings for the calls, sorted by line (deterministic)."""
    checker = _Checker(api, rule_at or _no_rule)
    for call in calls:
        checker.check(call)
    return sorted(set(checker.findings))


def check_policies(
    path: str, policies: list[tuple[str, int]], api: Api, rule_at: RuleAt | None = None
) -> list[Finding]:
    """Router policy names compared in code that vllm-router does not offer."""
    if not api.router_policies:
        return []
    rule_at = rule_at or _no_rule
    known = ", ".join(api.router_policies)
    return [
        Finding(
            path,
            line,
            rule_at(line, line),
            "router-policy",
            f"vllm-router has no policy {value!r} (it has {known})",
            "ignored",
        )
        for value, line in policies
        if value not in api.router_policies
    ]
