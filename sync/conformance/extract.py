"""Find the HTTP calls in Python code, as skeletons: method, route, query keys, body keys, and the
fields of the answer the code reads afterwards.

Recognised calls: ``requests`` / ``httpx`` / ``aiohttp``-style ``X.get|post|put|delete|patch(url, ...)``
whose first argument is a URL (a string or f-string with a route, or a local name bound to one),
and the wrappers declared in the rule tables (``[[http_wrapper]]`` in ``translations/strings.toml``:
``self._make_request("flush_cache", payload)``, ``await post(url, payload)``). Values are followed
through local assignments of the same function (``url = f"..."``, ``payload = {...}`` then
``payload["k"] = v``, ``output = await post(...)`` then ``output["choices"][0]``). What cannot be
known statically (a route built from a variable) is left out rather than guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import libcst as cst

from sync.conformance.focus import URLISH, VERB_CALL, focus
from sync.conformance.model import Body, CallSkeleton, Read
from sync.translator.cst_codegen import line_ranges

VERBS = {"get": "GET", "post": "POST", "put": "PUT", "delete": "DELETE", "patch": "PATCH"}
_SCHEME = re.compile(r"^(https?://)?(\{\}|[\w.\-\[\]]+)?(:(\{\}|\d+))?")


@dataclass(frozen=True)
class Wrapper:
    """A project helper that makes an HTTP call (declared in the rule tables)."""

    name: str
    method: str
    route_arg: int | None = None  # index of a bare route name ("flush_cache" -> "/flush_cache")
    url_arg: int | None = None  # index of a full URL
    body_arg: int | None = None
    body_kwarg: str | None = None
    method_arg: int | None = None  # index of the HTTP method, when the helper takes it ("POST")
    params_kwarg: str | None = None  # keyword of the query parameters
    returns: str = "json"  # "json": the call's value is the decoded answer; "response": a response object
    modules: tuple[str, ...] = ()  # a bare-name call counts only when imported from one of these

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Wrapper:
        return cls(
            name=str(row["name"]),
            method=str(row.get("method", "POST")).upper(),
            route_arg=row.get("route_arg"),
            url_arg=row.get("url_arg"),
            body_arg=row.get("body_arg"),
            body_kwarg=row.get("body_kwarg"),
            method_arg=row.get("method_arg"),
            params_kwarg=row.get("params_kwarg"),
            returns=str(row.get("returns", "json")),
            modules=tuple(row.get("modules", ())),
        )


def wrappers_from_settings(settings: dict[str, dict[str, Any]]) -> list[Wrapper]:
    return [Wrapper.from_row(row) for row in settings.get("string", {}).get("http_wrapper", ())]


@dataclass
class _Binding:
    kind: str  # "url" | "body" | "response" | "json"
    url: str | None = None
    host: str = ""
    body: Body | None = None
    call: CallSkeleton | None = None
    path: tuple[str | int, ...] = ()


@dataclass
class _Scope:
    names: dict[str, _Binding] = field(default_factory=dict)
    is_class: bool = False  # a class body: seen by its own statements, not by its methods (Python)


def _const(node: cst.BaseExpression) -> str | int | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    return None


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _unwrap(node: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(node, cst.Await):
        node = node.expression
    return node


class _Extractor(cst.CSTVisitor):
    def __init__(
        self,
        path: str,
        wrappers: list[Wrapper],
        lines: list[int],
        ranges: tuple[dict[cst.CSTNode, int], dict[cst.CSTNode, int]],
    ) -> None:
        super().__init__()
        self.path = path
        self.lines = lines  # the original line of each parsed line (``focus`` leaves some out)
        self.starts, self.ends = ranges  # each node's first and last parsed line
        self.by_name = {w.name: w for w in wrappers}
        self.scopes: list[_Scope] = [_Scope()]
        self.calls: list[CallSkeleton] = []
        self.call_of: dict[int, CallSkeleton] = {}
        self.read_of: dict[int, tuple[CallSkeleton, Read]] = {}
        self.imported: dict[str, str] = {}  # local name -> module it was imported from
        self.module_names: dict[str, str] = {}  # ``import a.b as x``: x -> a.b
        self.policies: list[tuple[str, int]] = []  # router policy names the code compares with
        self.defined: set[int] = set()  # id() of decorator calls (a server defining its routes)

    # --- scopes and imports ---------------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scopes.append(_Scope())

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scopes.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scopes.append(_Scope(is_class=True))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.scopes.pop()

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:  # ``import a.b.c as x``: x is the module a.b.c itself
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.module_names[alias.asname.name.value] = _code(alias.name)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.module is None or isinstance(node.names, cst.ImportStar):
            return
        module = _code(node.module)
        for alias in node.names:
            local = alias.asname.name if alias.asname else alias.name
            if isinstance(local, cst.Name):
                self.imported[local.value] = module

    def _lookup(self, name: str) -> _Binding | None:
        """The nearest binding of ``name``: the current scope's, then the enclosing ones', skipping
        class bodies a method sits in (hand-kept rather than LibCST's ``ScopeProvider``, which gave
        the same result on every file of five slime revisions at 2.5x the extraction time)."""
        for depth, scope in enumerate(reversed(self.scopes)):
            if scope.is_class and depth > 0:
                continue
            if name in scope.names:
                return scope.names[name]
        return None

    def _line(self, node: cst.CSTNode) -> tuple[int, int]:
        return self.lines[self.starts[node] - 1], self.lines[self.ends[node] - 1]

    # --- values ---------------------------------------------------------------------------------
    def _url(self, node: cst.BaseExpression) -> tuple[str, str] | None:
        """(template with {} for computed parts, the code of those parts) of a URL expression."""
        node = _unwrap(node)
        value = _const(node)
        if isinstance(value, str):
            return value, ""
        if isinstance(node, cst.FormattedString):
            parts, hosts = [], []
            for part in node.parts:
                if isinstance(part, cst.FormattedStringText):
                    parts.append(part.value)
                else:
                    parts.append("{}")
                    hosts.append(_code(part.expression))
            return "".join(parts), " ".join(hosts)
        if isinstance(node, cst.Name):
            binding = self._lookup(node.value)
            if binding is not None and binding.kind == "url" and binding.url is not None:
                return binding.url, binding.host
            return None
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            left, right = self._url(node.left), self._url(node.right)
            left = left or ("{}", _code(node.left))
            if right is None:
                return None
            return left[0] + right[0], f"{left[1]} {right[1]}".strip()
        return None

    def _body(self, node: cst.BaseExpression | None) -> Body:
        if node is None:
            return Body(open=True)
        node = _unwrap(node)
        if isinstance(node, cst.Dict):
            body = Body()
            for element in node.elements:
                if isinstance(element, cst.DictElement):
                    key = _const(element.key)
                    if isinstance(key, str):
                        body.keys[key] = self._nested(element.value)
                        body.lines[key] = self._line(element)[0]
                    else:
                        body.open = True
                else:
                    body.open = True
            return body
        if isinstance(node, cst.Name):
            binding = self._lookup(node.value)
            if binding is not None and binding.kind == "body" and binding.body is not None:
                return binding.body.copy()
            return Body(open=True)
        if isinstance(node, cst.BooleanOperation):
            body = self._body(node.left)
            body.open = body.open or not isinstance(_unwrap(node.right), cst.Dict)
            return body
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict":
            body = Body(open=any(arg.keyword is None for arg in node.args))
            for arg in node.args:
                if arg.keyword is not None:
                    body.keys[arg.keyword.value] = None
                    body.lines[arg.keyword.value] = self._line(arg)[0]
            return body
        return Body(open=True)

    def _nested(self, value: cst.BaseExpression) -> Body | None:
        """The keys of a value inside a body, when it is a dict the code shows (literal or bound)."""
        if isinstance(value, cst.Dict):
            return self._body(value)
        if isinstance(value, cst.Name):
            binding = self._lookup(value.value)
            if binding is not None and binding.kind == "body":
                return self._body(value)
        return None

    def _query(self, node: cst.BaseExpression) -> tuple[dict[str, int], bool]:
        node = _unwrap(node)
        if isinstance(node, cst.Dict):
            body = self._body(node)
            return dict(body.lines), body.open
        if isinstance(node, cst.ListComp | cst.List):
            elements = [node.elt] if isinstance(node, cst.ListComp) else [e.value for e in node.elements]
            found: dict[str, int] = {}
            for element in elements:
                if isinstance(element, cst.Tuple) and element.elements:
                    key = _const(element.elements[0].value)
                    if isinstance(key, str):
                        found[key] = self._line(element)[0]
                        continue
                return found, True
            return found, False
        if isinstance(node, cst.IfExp):
            left, left_open = self._query(node.body)
            return left, left_open or not isinstance(node.orelse, cst.Name)
        if isinstance(node, cst.Name) and node.value == "None":
            return {}, False
        return {}, True

    # --- calls ----------------------------------------------------------------------------------
    def _wrapper_for(self, func: cst.BaseExpression) -> Wrapper | None:
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
        wrapper = self.by_name.get(name) if isinstance(name, str) else None
        if wrapper is None:
            return None
        if wrapper.modules:
            if isinstance(func, cst.Name):
                return wrapper if self.imported.get(func.value, "") in wrapper.modules else None
            receiver = func.value if isinstance(func, cst.Attribute) else None
            if isinstance(receiver, cst.Name):
                module = self.module_names.get(receiver.value) or (
                    self.imported.get(receiver.value, "") + "." + receiver.value
                )
                if any(module.endswith(m) or m.endswith("." + receiver.value) for m in wrapper.modules):
                    return wrapper
            return None
        return wrapper

    def visit_Decorator(self, node: cst.Decorator) -> None:
        if isinstance(node.decorator, cst.Call):
            self.defined.add(id(node.decorator))

    def visit_Call(self, node: cst.Call) -> None:
        if id(node) in self.defined:
            return
        skeleton = self._http_call(node)
        if skeleton is not None:
            self.calls.append(skeleton)
            self.call_of[id(node)] = skeleton

    def _http_call(self, node: cst.Call) -> CallSkeleton | None:
        positional = [arg.value for arg in node.args if arg.keyword is None and arg.star == ""]
        keywords = {arg.keyword.value: arg.value for arg in node.args if arg.keyword is not None}
        wrapper = self._wrapper_for(node.func)
        if wrapper is not None:
            return self._wrapper_call(node, wrapper, positional, keywords)
        return self._verb_call(node, positional, keywords)

    def _wrapper_call(
        self, node: cst.Call, wrapper: Wrapper, positional: list, keywords: dict
    ) -> CallSkeleton | None:
        """A declared helper: route or URL, body and method where the wrapper row says they are."""
        line, end = self._line(node)
        via = _code(node.func)
        route: str | None = None
        template, host = "", ""
        if wrapper.route_arg is not None and len(positional) > wrapper.route_arg:
            found = self._url(positional[wrapper.route_arg])  # "flush_cache", f"wake_up?{...}"
            template = "/" + found[0].lstrip("/") if found is not None and found[0][:1] != "{" else ""
        elif wrapper.url_arg is not None and len(positional) > wrapper.url_arg:
            found = self._url(positional[wrapper.url_arg])
            template, host = found if found is not None else ("", "")
        route = _route_of(template) if template else None
        if route is None:
            return None
        body_node = None
        if wrapper.body_arg is not None and len(positional) > wrapper.body_arg:
            body_node = positional[wrapper.body_arg]
        elif wrapper.body_kwarg and wrapper.body_kwarg in keywords:
            body_node = keywords[wrapper.body_kwarg]
        if isinstance(body_node, cst.Name) and body_node.value == "None":
            body_node = None
        body = (
            self._body(body_node) if body_node is not None else (Body() if wrapper.method != "GET" else None)
        )
        query, query_open = _split_query(template)
        if wrapper.params_kwarg and wrapper.params_kwarg in keywords:
            extra, extra_open = self._query(keywords[wrapper.params_kwarg])
            query.update(extra)
            query_open = query_open or extra_open
        method = wrapper.method
        if wrapper.method_arg is not None and len(positional) > wrapper.method_arg:
            named = _const(positional[wrapper.method_arg])
            if not isinstance(named, str):
                return None
            method = named.upper()
            if body_node is None and method == "GET":
                body = None
        return CallSkeleton(
            self.path, line, end, via, method, route, query, query_open, body, [], *_target(host, True)
        )  # fmt: skip

    def _verb_call(self, node: cst.Call, positional: list, keywords: dict) -> CallSkeleton | None:
        """``X.get|post|...(url, json=..., params=...)`` with a URL the code shows."""
        line, end = self._line(node)
        via = _code(node.func)
        if not isinstance(node.func, cst.Attribute) or node.func.attr.value not in VERBS or not positional:
            return None
        receiver = node.func.value
        if isinstance(receiver, cst.Name) and receiver.value in _SERVER_OBJECTS:
            return None
        found = self._url(positional[0])
        if found is None:
            return None
        template, host = found
        if not (template.startswith(("/", "http://", "https://", "{}"))) or "/" not in template:
            return None
        route = _route_of(template)
        if route is None:
            return None
        query, query_open = _split_query(template)
        if "params" in keywords:
            extra, extra_open = self._query(keywords["params"])
            query.update(extra)
            query_open = query_open or extra_open
        body = None
        if "json" in keywords and not (
            isinstance(keywords["json"], cst.Name) and keywords["json"].value == "None"
        ):
            body = self._body(keywords["json"])
        elif "data" in keywords:
            body = Body(open=True)
        skeleton = CallSkeleton(
            self.path, line, end, via, VERBS[node.func.attr.value], route, query, query_open, body, [], *_target(host, not template.startswith("http"))
        )  # fmt: skip
        return skeleton

    # --- bindings and reads -----------------------------------------------------------------------
    def _answer(self, node: cst.BaseExpression) -> tuple[CallSkeleton, tuple[str | int, ...]] | None:
        """The call whose decoded answer ``node`` is (or is a part of), with the path into it."""
        node = _unwrap(node)
        if isinstance(node, cst.Name):
            binding = self._lookup(node.value)
            if binding is not None and binding.kind == "json" and binding.call is not None:
                return binding.call, binding.path
            return None
        if isinstance(node, cst.Call):
            skeleton = self.call_of.get(id(node))
            if skeleton is not None:
                wrapper = self._wrapper_for(node.func)
                return (skeleton, ()) if wrapper is not None and wrapper.returns == "json" else None
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "json" and not node.args:
                target = _unwrap(func.value)
                if isinstance(target, cst.Name):
                    binding = self._lookup(target.value)
                    if binding is not None and binding.kind == "response" and binding.call is not None:
                        return binding.call, ()
                inner = self.call_of.get(id(target))
                return (inner, ()) if inner is not None else None
            if isinstance(func, cst.Attribute) and func.attr.value == "get" and node.args:
                key = _const(node.args[0].value)
                base = self._answer(func.value)
                if base is not None and isinstance(key, str):
                    return base[0], (*base[1], key)
            return None
        if isinstance(node, cst.Subscript) and len(node.slice) == 1:
            index = node.slice[0].slice
            key = _const(index.value) if isinstance(index, cst.Index) else None
            base = self._answer(node.value)
            if base is not None and key is not None:
                return base[0], (*base[1], key)
        return None

    def leave_Subscript(self, original_node: cst.Subscript) -> None:
        self._record_read(original_node, "subscript", original_node.value)

    def leave_Call(self, original_node: cst.Call) -> None:
        func = original_node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "get":
            self._record_read(original_node, "get", func.value)

    def _record_read(self, node: cst.BaseExpression, how: str, inner: cst.BaseExpression) -> None:
        found = self._answer(node)
        if found is None or not found[1]:
            return
        self.read_of.pop(id(_unwrap(inner)), None)  # a longer read supersedes its prefix
        self.read_of[id(node)] = (found[0], Read(found[1], self._line(node)[0], how))  # type: ignore[arg-type]

    def visit_Comparison(self, node: cst.Comparison) -> None:
        sides = [node.left, *(target.comparator for target in node.comparisons)]
        if any("router_policy" in _code(side) for side in sides):
            for side in sides:
                value = _const(side)
                if isinstance(value, str):
                    self.policies.append((value, self._line(side)[0]))
        for target in node.comparisons:
            if isinstance(target.operator, cst.In | cst.NotIn):
                key = _const(node.left)
                found = self._answer(target.comparator)
                if found is not None and isinstance(key, str):
                    read = Read((*found[1], key), self._line(node)[0], "in")
                    self.read_of[id(node)] = (found[0], read)

    def leave_Assign(self, original_node: cst.Assign) -> None:
        if len(original_node.targets) != 1:
            return
        target = original_node.targets[0].target
        value = _unwrap(original_node.value)
        if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
            binding = self._lookup(target.value.value)
            index = target.slice[0].slice if len(target.slice) == 1 else None
            key = _const(index.value) if isinstance(index, cst.Index) else None
            if binding is not None and binding.kind == "body" and binding.body is not None:
                if isinstance(key, str):
                    binding.body.keys[key] = None
                    binding.body.lines[key] = self._line(original_node)[0]
                else:
                    binding.body.open = True
            return
        if not isinstance(target, cst.Name):
            return
        scope = self.scopes[-1]
        name = target.value
        skeleton = self.call_of.get(id(value))
        answer = self._answer(value)
        if answer is not None:
            scope.names[name] = _Binding("json", call=answer[0], path=answer[1])
        elif skeleton is not None:
            scope.names[name] = _Binding("response", call=skeleton)
        elif isinstance(value, cst.Dict) or (isinstance(value, cst.Call) and _code(value.func) == "dict"):
            scope.names[name] = _Binding("body", body=self._body(value))
        else:
            found = self._url(value) if isinstance(value, cst.FormattedString | cst.SimpleString) else None
            if found is not None and "/" in found[0]:
                scope.names[name] = _Binding("url", url=found[0], host=found[1])
            else:
                scope.names.pop(name, None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Name) and node.value is not None and isinstance(node.value, cst.Dict):
            self.scopes[-1].names[node.target.value] = _Binding("body", body=self._body(node.value))

    def leave_Module(self, original_node: cst.Module) -> None:
        for skeleton, read in self.read_of.values():
            skeleton.reads.append(read)
        for skeleton in self.calls:
            skeleton.reads.sort(key=lambda r: (r.line, r.path.__repr__()))


_ENGINE_HINTS = ("router", "server_host", "server_port", "engine", "vllm", "sglang", "worker")
_SERVER_OBJECTS = {"app", "router", "api", "bp", "blueprint"}  # @app.post("/x"): a route defined, not called


def _target(host: str, hostless: bool) -> tuple[bool, bool]:
    """(names the router, names vime's engine or router) from the code that computes the URL's host."""
    lowered = host.lower()
    return "router" in lowered, (hostless and not host) or any(hint in lowered for hint in _ENGINE_HINTS)


def _route_of(template: str) -> str | None:
    """The route part of a URL template: ``http://{}:{}/x/{}?a=1`` -> ``/x/{}``."""
    rest = template
    if not rest.startswith("/"):
        match = _SCHEME.match(rest)
        rest = rest[match.end() :] if match else rest
    if not rest.startswith("/"):
        return None
    return rest.split("?", 1)[0]


def _split_query(template: str) -> tuple[dict[str, int], bool]:
    if "?" not in template:
        return {}, False
    query = template.split("?", 1)[1]
    found, more = {}, False
    for part in query.split("&"):
        name = part.split("=", 1)[0]
        if name and "{" not in name:
            found[name] = 0
        else:
            more = True
    return found, more


def might_call_http(text: str, wrappers: list[Wrapper]) -> bool:
    """Cheap test before a full parse: an HTTP-verb call and a URL-like string, or a wrapper call."""
    if VERB_CALL.search(text) and URLISH.search(text):
        return True
    for wrapper in wrappers:
        if wrapper.modules:
            if any(module.rsplit(".", 1)[-1] in text for module in wrapper.modules):
                return True
        elif wrapper.name + "(" in text:
            return True
    return False


class ExtractStatus(StrEnum):
    CHECKED = "checked"  # read: its calls and policies are in the result (maybe none)
    SKIPPED = "skipped"  # names no HTTP helper and no router policy: nothing to read
    FAILED = "failed"  # does not parse: its calls are not checked (the reason says where)


@dataclass
class Extracted:
    """What one module says about the target API: its HTTP calls and the router policies it names,
    and whether it was read at all."""

    calls: list[CallSkeleton] = field(default_factory=list)
    policies: list[tuple[str, int]] = field(default_factory=list)
    status: ExtractStatus = ExtractStatus.CHECKED
    reason: str = ""  # FAILED: the parser's message


def extract(path: str, text: str, wrappers: list[Wrapper]) -> Extracted:
    """Every HTTP call skeleton in a Python module (none, and status FAILED, when it does not parse)."""
    if not might_call_http(text, wrappers) and "router_policy" not in text:
        return Extracted(status=ExtractStatus.SKIPPED)
    focused, lines = focus(text, [(w.name, w.modules) for w in wrappers])  # what may hold a call
    try:
        module = cst.parse_module(focused)
    except cst.ParserSyntaxError as error:
        return Extracted(
            status=ExtractStatus.FAILED, reason=f"{path}: {error.message} (line {error.raw_line})"
        )
    extractor = _Extractor(path, wrappers, lines, line_ranges(module))
    module.visit(extractor)
    for skeleton in extractor.calls:
        skeleton.query = {k: (v or skeleton.line) for k, v in skeleton.query.items()}
    return Extracted([s for s in extractor.calls if s.route is not None], extractor.policies)
