"""The target API that translated code must conform to: vLLM's routes (from the installed vLLM's own
FastAPI app) and vllm-router's routes, with JSON-schema look-ups for bodies and responses.

Building it imports vLLM (5-10 s), so :func:`load_api` caches the document on disk per vLLM version
(and per version of the builder), the way the gate caches ``vllm serve``'s options.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from sync.translator.vllm_flags import VllmNotInstalled, _installed_vllm

ANY: dict[str, Any] = {}  # a schema that accepts anything (and whose fields are unknown)


class ApiUnavailable(RuntimeError):
    """The target API cannot be described here (vLLM missing, or its app does not build)."""


@dataclass(frozen=True)
class Operation:
    """One method of one route: query parameters (name -> required), body and response schemas."""

    query: dict[str, bool] = field(default_factory=dict)
    body: dict[str, Any] | None = None  # {"required": bool, "schema": {...}}; None: takes no body
    response: dict[str, Any] | None = None  # JSON schema of a 200 answer; None: not known
    raw: bool = False  # the handler reads the raw request (fields taken from its source)
    source: str = "vllm"  # "vllm", "vllm-router" or "vime" (vime's own routes on the engines it starts)


@dataclass
class Api:
    """Routes of the engine and the router, and the component schemas their ``$ref`` point to."""

    version: str
    routes: dict[str, dict[str, Operation]]
    schemas: dict[str, Any]
    router_policies: list[str] = field(default_factory=list)

    @functools.cached_property
    def _templates(self) -> list[tuple[re.Pattern[str], str]]:
        out = []
        for path in self.routes:
            pattern = re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(path))
            out.append((re.compile(pattern + r"\Z"), path))
        return out

    def match(self, route: str) -> str | None:
        """The route template a concrete route (``{}`` for unknown parts) falls under, or None."""
        if route in self.routes:
            return route
        concrete = route.replace("{}", "x")
        for pattern, path in self._templates:
            if pattern.match(concrete):
                return path
        return None

    def resolve(self, schema: dict[str, Any] | None) -> dict[str, Any]:
        """Follow ``$ref`` (and single-element ``allOf``) to the schema itself."""
        seen = 0
        while schema and seen < 32:
            seen += 1
            if "$ref" in schema:
                schema = self.schemas.get(schema["$ref"].rsplit("/", 1)[-1], ANY)
            elif len(schema.get("allOf", ())) == 1:
                schema = schema["allOf"][0]
            else:
                break
        return schema or ANY

    def alternatives(self, schema: dict[str, Any] | None) -> list[dict[str, Any]]:
        """The non-null alternatives of a schema (``anyOf`` / ``oneOf`` unfolded)."""
        schema = self.resolve(schema)
        options = schema.get("anyOf") or schema.get("oneOf")
        if not options:
            return [schema]
        out = []
        for option in options:
            out += [alt for alt in self.alternatives(option) if alt.get("type") != "null"]
        return out or [ANY]

    def fields(self, schema: dict[str, Any] | None) -> tuple[dict[str, Any], set[str], bool] | None:
        """``(properties, required, closed)`` of an object schema; None when its fields are not known.

        ``closed`` means unknown keys are rejected (``additionalProperties: false``).
        """
        properties: dict[str, Any] = {}
        required: set[str] | None = None
        closed = True
        for alt in self.alternatives(schema):
            if "properties" not in alt:
                return None
            properties.update(alt["properties"])
            needed = set(alt.get("required", ()))
            required = needed if required is None else required & needed
            closed = closed and alt.get("additionalProperties") is False
        return properties, required or set(), closed

    def child(self, schema: dict[str, Any] | None, key: str | int) -> dict[str, Any] | None:
        """The schema of ``value[key]``; ANY when the schema does not say; None when it has no such key."""
        if isinstance(key, int):
            for alt in self.alternatives(schema):
                if alt.get("type") == "array" or "items" in alt or "prefixItems" in alt:
                    prefix = alt.get("prefixItems")
                    if prefix and key < len(prefix):
                        return prefix[key]
                    return alt.get("items", ANY)
            return ANY
        known = self.fields(schema)
        if known is None:
            return ANY
        properties, _required, _closed = known
        if key in properties:
            return properties[key] or ANY
        for alt in self.alternatives(schema):
            extra = alt.get("additionalProperties")
            if extra not in (None, False):
                return extra if isinstance(extra, dict) else ANY
        return None


def _router_routes() -> dict[str, dict[str, Operation]]:
    text = resources.files("sync.conformance").joinpath("router_routes.toml").read_text(encoding="utf-8")
    routes: dict[str, dict[str, Operation]] = {}
    for row in tomllib.loads(text).get("route", []):
        query = dict.fromkeys(row.get("query", ()), False)
        body: dict[str, Any] = {"required": False, "schema": ANY}
        if "body" in row:  # a JSON object with these fields and no others
            properties = dict.fromkeys(row["body"], ANY)
            schema = {"type": "object", "properties": properties, "additionalProperties": False}
            body = {"required": True, "schema": schema | {"required": list(row.get("body_required", ()))}}
        source = row.get("source", "vllm-router")
        routes[row["path"]] = {
            method: Operation(query=query, body=body, source=source) for method in row["methods"]
        }
    return routes


def api_from_document(version: str, document: dict[str, Any]) -> Api:
    routes: dict[str, dict[str, Operation]] = {}
    for path, methods in document["routes"].items():
        routes[path] = {method: Operation(**op) for method, op in methods.items()}
    for path, methods in _router_routes().items():
        merged = routes.setdefault(path, {})
        for method, op in methods.items():
            merged.setdefault(method, op)
    return Api(version, routes, document["schemas"], list(document.get("router_policies", ())))


def _cache_path(key: str, package: Path) -> Path:
    builder = hashlib.sha256(Path(__file__).with_name("build_api.py").read_bytes()).hexdigest()[:10]
    stamp = int((package / "entrypoints").stat().st_mtime) if (package / "entrypoints").exists() else 0
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vime-sync"
    return base / f"vllm-api-{key.replace('==', '-')}-{stamp}-{builder}.json"


@functools.lru_cache(maxsize=1)
def load_api() -> Api:
    """The installed vLLM's API (cached on disk per vLLM version); ApiUnavailable when it cannot be built."""
    try:
        key, package = _installed_vllm()
    except VllmNotInstalled as error:
        raise ApiUnavailable(f"vLLM is not installed ({error})") from None
    cache = _cache_path(key, package)
    try:
        return api_from_document(key, json.loads(cache.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError):
        pass
    done = subprocess.run(
        [sys.executable, "-m", "sync.conformance.build_api"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ApiUnavailable(f"could not build vLLM's app to read its routes: {last}")
    document = json.loads(done.stdout)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        scratch = cache.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(done.stdout, encoding="utf-8")
        os.replace(scratch, cache)
    except OSError:  # a read-only home: no cache, same answer
        pass
    return api_from_document(key, document)
