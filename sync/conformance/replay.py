"""Send a call skeleton to a live server, with a value of the right type for each key: how the
checker is proven right (tests/test_conformance_live.py, benchmarks/bench_conformance.py).

Only calls that cannot change a shared engine are replayed (``replayable``): a route or method the
server does not have is answered before any handler runs; the routes in ``SAFE_ROUTES`` only read
state, generate a couple of tokens or drop the prefix cache.
"""

from __future__ import annotations

from typing import Any

import requests

from sync.conformance.model import Body, CallSkeleton
from sync.conformance.schema import Api

SAFE_ROUTES = frozenset(
    {
        "/health",
        "/is_paused",
        "/is_sleeping",
        "/metrics",
        "/reset_prefix_cache",
        "/server_info",
        "/version",
        "/weight_info",
        "/v1/models",
        "/v1/completions",
        "/inference/v1/generate",
        "/abort_requests",
        "/workers",
    }
)

# Values of the right type for the keys that slime-style code sends (the checker checks keys).
VALUES: dict[str, Any] = {
    "token_ids": [1, 2, 3],
    "input_ids": [1, 2, 3],
    "sampling_params": {"max_tokens": 2},
    "max_tokens": 2,
    "logprobs": 0,
    "request_ids": ["none"],
    "return_logprob": True,
    "names": ["w"],
    "flush_cache": False,
    "master_port": 1,
    "new_version": "7",
    "kwargs": {},
    "prompt": [1, 2, 3],
    "stream": False,
}


def replayable(call: CallSkeleton, api: Api) -> bool:
    """Safe to send to a shared engine: the server refuses it before any handler, or only reads."""
    if not call.checkable or call.route is None:
        return False
    template = api.match(call.route)
    if template is None or call.method not in api.routes[template]:
        return True
    if call.body is not None and "method" in call.body.keys:  # runs a worker method
        return False
    if template == "/collective_rpc":  # without a method the handler refuses before any work
        return True
    if template == "/update_weight_version" and call.body is None:  # no body: refused by validation
        return True
    return template in SAFE_ROUTES


def _value(key: str, nested: Body | None) -> Any:
    if nested is not None:
        return {k: _value(k, v) for k, v in nested.keys.items()}
    return VALUES.get(key, "x")


def send(
    call: CallSkeleton, engine_url: str, router_url: str | None = None, timeout: float = 60
) -> requests.Response:
    base = router_url if call.router and router_url else engine_url
    route = (call.route or "/").replace("{}", "x")
    params = [(name, VALUES.get(name, "7")) for name in call.query]
    body = None if call.body is None else {k: _value(k, v) for k, v in call.body.keys.items()}
    return requests.request(call.method, base + route, params=params or None, json=body, timeout=timeout)


def present(answer: Any, path: tuple[str | int, ...]) -> bool:
    """Does the decoded answer have ``path`` (``("choices", 0, "text")``)?"""
    for key in path:
        try:
            answer = answer[key]
        except (KeyError, IndexError, TypeError):
            return False
    return True
