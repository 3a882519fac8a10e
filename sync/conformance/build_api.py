"""Build the target API description from the installed vLLM and vllm-router (run in a subprocess).

``python -m sync.conformance.build_api`` prints one JSON document on stdout: every route of the
FastAPI app that ``vllm serve`` builds (dev-mode and token-in/token-out routes included), its
methods, query parameters, request body schema and response schema, plus vllm-router's policies.
It imports vLLM (5-10 s), which is why :mod:`sync.conformance.schema` runs it once per vLLM
version and caches the answer.

Routes whose handler reads the raw request (``await raw_request.json()``,
``raw_request.query_params``) have no body or query in the OpenAPI document; their fields are read
from the handler's own source, and its ``JSONResponse(content={...})`` keys give the response.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import sys
import textwrap
import warnings
from typing import Any

# Pydantic models of responses that FastAPI does not declare (handlers return JSONResponse).
RESPONSE_MODELS = {
    "/inference/v1/generate": (
        "vllm.entrypoints.scale_out.token_in_token_out.protocol",
        "GenerateTokensResponse",
    ),
    "/v1/completions": ("vllm.entrypoints.openai.completion.protocol", "CompletionResponse"),
    "/v1/chat/completions": ("vllm.entrypoints.openai.chat_completion.protocol", "ChatCompletionResponse"),
    "/v1/models": ("vllm.entrypoints.serve.engine.protocol", "ModelList"),
}

# Embedded bodies whose shape the weight-transfer backend decides: the NCCL backend's dataclasses
# (vLLM builds them with ``cls(**info)``, so an unknown key is an error).
NESTED_BODIES = {
    "/init_weight_transfer_engine": (
        "init_info",
        "vllm.distributed.weight_transfer.nccl_common",
        "NCCLWeightTransferInitInfo",
    ),
    "/update_weights": (
        "update_info",
        "vllm.distributed.weight_transfer.nccl_engine",
        "NCCLWeightTransferUpdateInfo",
    ),
}


def _dataclass_schema(module: str, name: str) -> dict[str, Any] | None:
    import dataclasses
    import importlib

    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
    fields = [f for f in dataclasses.fields(cls) if f.init]
    required = [
        f.name
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    return {
        "type": "object",
        "title": f"{name} (NCCL weight-transfer backend)",
        "properties": {f.name: {} for f in fields},
        "required": required,
        "additionalProperties": False,
    }


def _handler_facts(endpoint: Any) -> dict[str, Any]:
    """Body keys, required body keys, query keys and response keys a raw-request handler uses."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(endpoint)))
    except (OSError, TypeError, SyntaxError):
        return {}
    body_names: set[str] = set()
    body_keys: set[str] = set()
    query: set[str] = set()
    response: set[str] = set()
    from_body: dict[str, str] = {}  # local name -> body key it was read from
    required: set[str] = set()
    returns_json = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Await):
            call = node.value.value
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "json"
            ):
                body_names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    for node in ast.walk(tree):
        key = _read_key(node, body_names)
        if key is not None:
            body_keys.add(key)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            key = _read_key(node.value, body_names)
            if key is not None:
                from_body[node.targets[0].id] = key
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "getlist")
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "query_params"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            query.add(str(node.args[0].value))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "JSONResponse":
            returns_json = True
            for keyword in node.keywords:
                if keyword.arg == "content" and isinstance(keyword.value, ast.Dict):
                    response |= {k.value for k in keyword.value.keys if isinstance(k, ast.Constant)}
    for node in ast.walk(tree):  # `x = body.get("k")` ... `if x is None: raise` makes "k" required
        if (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name)
            and node.test.left.id in from_body
            and isinstance(node.test.ops[0], ast.Is)
            and any(isinstance(s, ast.Raise) for s in node.body)
        ):
            required.add(from_body[node.test.left.id])
    facts: dict[str, Any] = {}
    if body_names:
        properties = {key: {} for key in sorted(body_keys)}
        facts["body"] = {"type": "object", "properties": properties, "required": sorted(required)}
    if query:
        facts["query"] = dict.fromkeys(sorted(query), False)
    if returns_json and response:
        facts["response"] = {"type": "object", "properties": {key: {} for key in sorted(response)}}
    return facts


def _read_key(node: ast.AST, names: set[str]) -> str | None:
    """``body["k"]`` or ``body.get("k")`` on one of ``names``: the key."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id in names
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return node.slice.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in names
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ):
        return str(node.args[0].value)
    return None


def _operation(op: dict[str, Any]) -> dict[str, Any]:
    query = {p["name"]: bool(p.get("required")) for p in op.get("parameters", []) if p.get("in") == "query"}
    body = None
    request = op.get("requestBody")
    if request:
        content = request.get("content", {}).get("application/json", {})
        body = {"required": bool(request.get("required")), "schema": content.get("schema", {})}
    response = op.get("responses", {}).get("200", {}).get("content", {}).get("application/json", {})
    schema = response.get("schema") or None
    return {"query": query, "body": body, "response": schema, "raw": False}


def build() -> dict[str, Any]:
    os.environ["VLLM_SERVER_DEV_MODE"] = "1"
    warnings.simplefilter("ignore")
    import importlib

    from fastapi.routing import APIRoute
    from vllm.entrypoints.launchers.app import build_app
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
    # Routes that exist only with an option are included with it: the token route
    # (--enable-scale-out) and the profiler's /start_profile, /stop_profile (--profiler-config).
    profiler = json.dumps(
        {"profiler": "torch", "torch_profiler_dir": os.path.join(os.sep, "tmp", "vime-sync-profile")}
    )
    args = parser.parse_args(["--enable-scale-out", "--profiler-config", profiler])
    app = build_app(args, supported_tasks=("generate",))
    spec = app.openapi()
    routes: dict[str, dict[str, Any]] = {}
    for path, operations in spec["paths"].items():
        routes[path] = {method.upper(): _operation(op) for method, op in operations.items()}
    for route in app.routes:  # FastAPI's own routes (/openapi.json, /docs) are not in the document
        if route.path not in routes and getattr(route, "methods", None):
            routes[route.path] = {
                method: {"query": {}, "body": None, "response": None, "raw": True} for method in route.methods
            }
    for route in app.routes:
        if not isinstance(route, APIRoute) or route.path not in routes:
            continue
        facts = _handler_facts(route.endpoint)
        for method in route.methods:
            op = routes[route.path].get(method)
            if op is None:
                continue
            if "body" in facts and op["body"] is None:
                op["body"], op["raw"] = {"required": False, "schema": facts["body"]}, True
            if "query" in facts:
                op["query"] = {**facts["query"], **op["query"]}
                op["raw"] = True
            if "response" in facts and op["response"] is None:
                op["response"] = facts["response"]
    schemas = dict(spec.get("components", {}).get("schemas", {}))
    for path, (module, name) in RESPONSE_MODELS.items():
        if path not in routes:
            continue
        try:
            model = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for def_name, definition in schema.pop("$defs", {}).items():
            schemas.setdefault(def_name, definition)
        schemas[name] = schema
        for op in routes[path].values():
            op["response"] = {"$ref": f"#/components/schemas/{name}"}
    for path, (key, module, name) in NESTED_BODIES.items():
        nested = _dataclass_schema(module, name)
        op = routes.get(path, {}).get("POST")
        if nested is None or op is None or op["body"] is None:
            continue
        ref = op["body"]["schema"].get("$ref", "").rsplit("/", 1)[-1]
        if ref in schemas and key in schemas[ref].get("properties", {}):
            schemas[ref] = {**schemas[ref], "properties": {**schemas[ref]["properties"], key: nested}}
    return {"routes": routes, "schemas": schemas, "router_policies": _router_policies()}


def _router_policies() -> list[str]:
    import argparse

    try:
        from vllm_router.router_args import RouterArgs
    except ImportError:
        return []
    parser = argparse.ArgumentParser()
    RouterArgs.add_cli_args(parser, use_router_prefix=False)
    for action in parser._actions:
        if "--policy" in action.option_strings:
            return sorted(action.choices or [])
    return []


if __name__ == "__main__":
    json.dump(build(), sys.stdout)
