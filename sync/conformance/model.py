"""Plain data of the conformance check: HTTP call skeletons found in code, and findings about them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

# What the server does with a call that has the finding: answers 4xx (rejected), accepts it but
# drops or misreads part of it (ignored), or answers while the code then fails reading the answer;
# for an import of a vime module or name that does not exist: the import fails (import).
Effect = Literal["rejected", "ignored", "read", "import"]
FINDING_KINDS = (
    "unknown-route",
    "wrong-method",
    "body-not-query",
    "query-not-body",
    "missing-field",
    "unknown-field",
    "response-field",
    "router-policy",
)


@dataclass
class Body:
    """Keys of a JSON body as far as the code shows them; ``open``: more keys may be sent."""

    keys: dict[str, Body | None] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    open: bool = False

    def copy(self) -> Body:
        keys = {k: (v.copy() if v is not None else None) for k, v in self.keys.items()}
        return Body(keys, dict(self.lines), self.open)


@dataclass(frozen=True)
class Read:
    """A read of the decoded JSON answer: ``answer["choices"][0]["text"]`` is ``("choices", 0, "text")``."""

    path: tuple[str | int, ...]
    line: int
    how: Literal["subscript", "get", "in"] = "subscript"


@dataclass
class CallSkeleton:
    """One HTTP call: what it sends and what it reads back."""

    path: str
    line: int
    end_line: int
    via: str  # the called expression, e.g. "requests.post" or "self._make_request"
    method: str
    route: str | None  # "/reset_prefix_cache"; "{}" stands for a part computed at run time; None: unknown
    query: dict[str, int] = field(default_factory=dict)  # name -> line
    query_open: bool = False
    body: Body | None = None  # None: no JSON body sent
    reads: list[Read] = field(default_factory=list)
    router: bool = False  # the URL names the router (router_ip, router_url, ...)
    engine: bool = True  # the URL names an engine or the router (not some other service)

    @property
    def checkable(self) -> bool:
        """Is the route known well enough to check (not just ``/{}``)?"""
        return self.route is not None and self.route.strip("/{}") != ""


@dataclass(frozen=True, order=True)
class Finding:
    """A mismatch between a call and the target API, at a line, with the rule that produced the line."""

    path: str
    line: int
    rule: str  # the translation rule applied on that line, or "conformance" when none was
    kind: str
    message: str
    effect: Effect = "rejected"

    def format(self) -> str:
        return f"{self.path}:{self.line}: {self.rule}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "rule": self.rule,
            "kind": self.kind,
            "message": self.message,
            "effect": self.effect,
        }
