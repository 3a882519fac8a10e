"""Client-side routing: vime's generate requests go straight to an engine picked here, not via vllm-router.

Why: the extra HTTP hop through vllm-router cost 13 % of rollout throughput on an H200
(docs/benchmarks.md). The router keeps its other jobs: it is the registry of healthy engines (the
RolloutManager and the health monitor add and remove workers there), and plugins or external
users may still post to it. So the engine list is read from ``GET {router}/workers``: on first use,
at most every ``refresh_s`` seconds after that, and soon after a request failed.

How an engine is picked:

- a request with a routing key (the sample's ``session_id``; the router's ``consistent_hash``
  policy keys on the same ``x-session-id``) goes to the engine with the highest hash of
  (key, url): rendezvous hashing, so the key stays on its engine while the list is unchanged and
  removing an engine moves only the keys that were on it;
- a request without a key but with a prompt affinity (a hash of its prompt ids, so the n samples
  of a GRPO group share it) goes to its rendezvous engine too, unless that engine has more of
  this process's requests in flight than the least loaded one plus 16 or 25 % (whichever is
  larger), then to the next one in hash order. That keeps a prompt's samples on the engine whose
  prefix cache holds it, as the router's default ``cache_aware`` policy tries to, without letting
  one engine queue up;
- a request with neither goes to the engine with the fewest requests in flight from this
  process, ties taken in turn.

An engine whose request failed (connection error, 5xx) is marked and skipped for ``failed_s``
seconds or until a request to it succeeds, so a dead engine costs each request at most one retry;
when every listed engine is marked, all are tried again (the caller's backoff paces that).
"""

from __future__ import annotations

import array
import asyncio
import hashlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from vime.utils.http_utils import CONNECTION_ERRORS, HTTPStatusError, get

logger = logging.getLogger(__name__)

REFRESH_S = 5.0  # how old the engine list may get while nothing fails
FAILED_S = 5.0  # how long an engine whose request failed is skipped
MIN_FORCED_REFRESH_S = 0.5  # failures in a burst share one refresh
LOAD_SLACK_ABS = 16  # an engine takes affine requests up to 16 more than the least loaded one ...
LOAD_SLACK_REL = 0.25  # ... or 25 % more, whichever is larger


class NoEngineError(ConnectionError):
    """The router lists no engine right now (all restarting, or none registered yet): retryable."""


def rendezvous_pick(key: str, urls: Sequence[str]) -> str:
    """The engine for ``key``: highest hash of (key, url); depends only on the set of urls."""
    return max(urls, key=lambda url: _weight(key, url))


def _weight(key: str, url: str) -> int:
    digest = hashlib.blake2b(f"{key}\0{url}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def bounded_affinity_pick(affinity: str, urls: Sequence[str], in_flight: Mapping[str, int]) -> str:
    """The first engine in ``affinity``'s rendezvous order whose load is within the bound.

    The bound is the least-loaded engine's requests in flight plus ``max(LOAD_SLACK_ABS,
    LOAD_SLACK_REL * that)``: the absolute part lets a whole group land together when engines are
    nearly idle, the relative part keeps busy engines within 25 % of each other.
    """
    fewest = min(in_flight.get(url, 0) for url in urls)
    bound = fewest + max(LOAD_SLACK_ABS, math.ceil(LOAD_SLACK_REL * fewest))
    ranked = sorted(urls, key=lambda url: _weight(affinity, url), reverse=True)
    return next(url for url in ranked if in_flight.get(url, 0) < bound)  # the least loaded always is


def prompt_affinity(token_ids: Sequence[int]) -> str:
    """A short hash of a prompt's token ids: equal prompts (a group's samples) get equal affinities."""
    return hashlib.blake2b(array.array("q", token_ids).tobytes(), digest_size=8).hexdigest()  # 64 us / 4k ids


def least_in_flight(urls: Sequence[str], in_flight: Mapping[str, int], turn: int) -> str:
    """The engine with the fewest requests in flight; ties broken by ``turn`` (a rotation counter)."""
    fewest = min(in_flight.get(url, 0) for url in urls)
    ties = [url for url in urls if in_flight.get(url, 0) == fewest]
    return ties[turn % len(ties)]


def listed_engines(answer: object) -> list[str]:
    """The engine urls of a ``GET /workers`` answer: those the router thinks healthy, else all listed.

    The router's own health checks can call a busy engine unhealthy; with none healthy, trying the
    listed ones (a failure marks them) beats waiting for the router to change its mind.
    """
    workers = (answer.get("workers") or []) if isinstance(answer, dict) else []
    healthy = [w["url"].rstrip("/") for w in workers if w.get("is_healthy", True)]
    return healthy or [w["url"].rstrip("/") for w in workers]


async def router_workers(router_url: str) -> list[str] | None:
    """The engines the router lists (``listed_engines``); None when ``router_url`` is no router (no ``/workers``)."""
    try:
        answer = await get(f"{router_url}/workers", timeout=10)
    except HTTPStatusError as exc:
        if exc.status == 404:
            return None
        raise
    return listed_engines(answer)


class EnginePicker:
    """Picks an engine per request from the router's worker list; one per event loop and router.

    ``fetch`` returns the engine list (None: the router URL is itself an engine); tests pass their
    own. All state is touched from one event loop, so only the refresh needs a lock.
    """

    def __init__(
        self,
        router_url: str,
        *,
        fetch: Callable[[], Awaitable[list[str] | None]] | None = None,
        refresh_s: float = REFRESH_S,
        failed_s: float = FAILED_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.router_url = router_url.rstrip("/")
        self._fetch = fetch or (lambda: router_workers(self.router_url))
        self.refresh_s, self.failed_s, self._clock = refresh_s, failed_s, clock
        self.urls: list[str] = []
        self.in_flight: dict[str, int] = {}
        self.failed: dict[str, float] = {}  # engine url -> when its request failed
        self.refreshes = 0
        self._fetched_at = -math.inf
        self._failed_at = -math.inf
        self._turn = 0
        self._lock = asyncio.Lock()
        self._told_not_router = False
        self.loop: asyncio.AbstractEventLoop | None = None  # set by engine_picker

    # ----- the list ------------------------------------------------------------------------------
    def _stale(self) -> bool:
        age = self._clock() - self._fetched_at
        if age >= self.refresh_s:
            return True
        # an empty list or a failure since the last read: read again, but not on every retry
        return (not self.urls or self._fetched_at <= self._failed_at) and age >= MIN_FORCED_REFRESH_S

    async def refresh(self) -> list[str]:
        """Read the engine list from the router if it is stale; on a router error keep the old one."""
        if not self._stale():
            return self.urls
        async with self._lock:
            if not self._stale():  # another request refreshed it while this one waited
                return self.urls
            try:
                urls = await self._fetch()
            except (HTTPStatusError, *CONNECTION_ERRORS) as exc:
                self._fetched_at = self._clock()  # do not ask a down router on every request
                if not self.urls:
                    raise NoEngineError(f"no engine list from {self.router_url}/workers: {exc}") from exc
                logger.warning(
                    "engine list from %s unavailable, keeping %s: %s", self.router_url, self.urls, exc
                )
                return self.urls
            if urls is None:  # the address names one engine (no router in front): use it directly
                if not self._told_not_router:
                    logger.info(
                        "%s has no /workers: sending generate requests to it as an engine", self.router_url
                    )
                    self._told_not_router = True
                urls = [self.router_url]
            self.urls, self._fetched_at = urls, self._clock()
            self.refreshes += 1
            return self.urls

    # ----- one request ---------------------------------------------------------------------------
    def choose(self, key: str | None, affinity: str | None = None) -> str:
        """The engine for one request from the current list (no I/O); see the module docstring."""
        if not self.urls:
            self._failed_at = self._clock()
            raise NoEngineError(f"{self.router_url} lists no engine (restarting, or none registered yet)")
        now = self._clock()
        self.failed = {url: at for url, at in self.failed.items() if now - at < self.failed_s}
        usable = [url for url in self.urls if url not in self.failed] or self.urls
        if key:
            return rendezvous_pick(key, usable)
        if affinity:
            return bounded_affinity_pick(affinity, usable, self.in_flight)
        self._turn += 1
        return least_in_flight(usable, self.in_flight, self._turn)

    async def acquire(self, key: str | None = None, affinity: str | None = None) -> str:
        """Pick an engine for one attempt and count it in flight; pair with :meth:`release`."""
        await self.refresh()
        url = self.choose(key, affinity)
        self.in_flight[url] = self.in_flight.get(url, 0) + 1
        return url

    def release(self, url: str, *, failed: bool) -> None:
        """The attempt on ``url`` ended; ``failed`` (lost to a dead engine) marks it and forces a refresh."""
        left = self.in_flight.get(url, 0) - 1
        if left > 0:
            self.in_flight[url] = left
        else:
            self.in_flight.pop(url, None)
        if failed:
            self.failed[url] = self._failed_at = self._clock()
        else:
            self.failed.pop(url, None)


@dataclass(frozen=True)
class EngineRoute:
    """Where one generate request goes: ``path`` on an engine that ``picker`` chooses per attempt."""

    picker: EnginePicker
    path: str
    key: str | None = None
    affinity: str | None = None

    async def acquire(self) -> str:
        return await self.picker.acquire(self.key, self.affinity)

    def url(self, engine: str) -> str:
        return engine + self.path

    def release(self, engine: str, *, failed: bool) -> None:
        self.picker.release(engine, failed=failed)


_pickers: dict[tuple[int, str], EnginePicker] = {}


def engine_picker(router_url: str) -> EnginePicker:
    """This event loop's picker for ``router_url`` (made on first use; in-flight counts are per process)."""
    loop = asyncio.get_running_loop()
    slot = (id(loop), router_url.rstrip("/"))
    picker = _pickers.get(slot)
    if picker is None or picker.loop is not loop:
        picker = EnginePicker(router_url)
        picker.loop = loop  # a strong reference: the loop's id cannot be reused while we hold it
        _pickers[slot] = picker
    return picker
