"""HTTP plumbing shared by the rollout side: free ports, async JSON calls, one background event loop.

Rollout functions are async but called from synchronous code (the RolloutManager, tests, train.py),
so a single long-lived event loop runs in a daemon thread; ``run`` submits coroutines to it. That
keeps one aiohttp session (and its connection pool) alive across rollouts instead of re-creating
it for every step.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import random
import socket
import threading
from collections.abc import Coroutine
from typing import Any

import aiohttp

_DEFAULT_TIMEOUT_S = 3600.0
# vLLM's server closes an idle keep-alive connection after 5 s (VLLM_HTTP_TIMEOUT_KEEP_ALIVE);
# aiohttp would reuse one for 15 s, and a request sent on a connection the server is closing at
# that moment fails (ServerDisconnectedError). Drop idle connections first, on our side.
KEEPALIVE_S = 4.0


class HTTPStatusError(RuntimeError):
    """A non-2xx answer; keeps the status and the body so callers can tell a dead engine from bad input."""

    def __init__(self, method: str, url: str, status: int, body: str):
        super().__init__(f"{method} {url} answered HTTP {status}: {body[:300]}")
        self.status = status
        self.body = body


# ----- ports ---------------------------------------------------------------------------------
_reserved_ports: set[int] = set()
_port_lock = threading.Lock()


def _bindable(port: int, host: str) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def is_port_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when ``port`` can be bound right now on ``host``, on loopback and on all interfaces."""
    return all(_bindable(port, h) for h in dict.fromkeys((host, "127.0.0.1", "0.0.0.0")))


def allocate_ports(count: int, start: int = 15000, host: str = "127.0.0.1", spread: int = 0) -> list[int]:
    """``count`` distinct free ports at or above ``start``, never handed out twice by this process.

    Ports are chosen by one caller (the RolloutManager) for all engines before any engine starts,
    so engines started in parallel cannot race for the same port. Other processes on the machine
    (other runs, other test sessions) allocate too, and an engine binds its port only a minute
    later; ``spread`` starts the search at a random offset in ``[start, start + spread)`` so that
    two processes rarely pick the same port in that window.
    """
    ports: list[int] = []
    with _port_lock:
        port = start + (random.randrange(spread) if spread > 0 else 0)
        while len(ports) < count:
            if port > 65535:
                raise RuntimeError(
                    f"no {count} free ports at or above {start}; free some or pick another start"
                )
            if port not in _reserved_ports and is_port_free(port, host):
                _reserved_ports.add(port)
                ports.append(port)
            port += 1
    return ports


def release_ports(ports: list[int]) -> None:
    """Give ports back to the allocator (after the process using them stopped)."""
    with _port_lock:
        _reserved_ports.difference_update(ports)


def get_host_ip() -> str:
    """This node's address as other Ray nodes see it; 127.0.0.1 on a single machine."""
    try:
        import ray

        if ray.is_initialized():
            return ray.util.get_node_ip_address()
    except Exception:
        pass
    return "127.0.0.1"


# ----- the background loop ---------------------------------------------------------------------
class _LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="vime-http-loop", daemon=True)
        self.thread.start()


_loop_thread: _LoopThread | None = None
_loop_lock = threading.Lock()


def background_loop() -> asyncio.AbstractEventLoop:
    """The process-wide event loop used by ``run`` (started on first use)."""
    global _loop_thread
    with _loop_lock:
        if _loop_thread is None:
            _loop_thread = _LoopThread()
            atexit.register(_close_background_session)
        return _loop_thread.loop


def _close_background_session() -> None:
    """At exit: close the background loop's HTTP session (else aiohttp logs it as unclosed)."""
    if _loop_thread is None or not _loop_thread.loop.is_running():
        return
    with contextlib.suppress(Exception):  # exiting anyway: a session that will not close is left
        asyncio.run_coroutine_threadsafe(close_session(), _loop_thread.loop).result(timeout=2)


def run(coro: Coroutine[Any, Any, Any], timeout: float | None = None) -> Any:
    """Run ``coro`` to completion on the background loop from synchronous code and return its result."""
    loop = background_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        raise RuntimeError("vime.utils.http_utils.run called from inside the background loop: await instead")
    return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)


# ----- async JSON calls -------------------------------------------------------------------------
_sessions: dict[int, tuple[asyncio.AbstractEventLoop, aiohttp.ClientSession]] = {}


def _session() -> aiohttp.ClientSession:
    """One session per event loop (aiohttp sessions are bound to the loop that made them).

    Keyed by the loop's id and checked against the loop itself: a loop made by a later
    ``asyncio.run`` can get the id of one that is gone, and must not inherit its session.
    """
    loop = asyncio.get_running_loop()
    known = _sessions.get(id(loop))
    if known is None or known[0] is not loop or known[1].closed:
        connector = aiohttp.TCPConnector(limit=0, force_close=False, keepalive_timeout=KEEPALIVE_S)
        session = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None))
        _sessions[id(loop)] = (loop, session)
        return session
    return known[1]


async def close_session() -> None:
    """Close this loop's session (call it before a loop of your own ends, e.g. at the end of ``asyncio.run``)."""
    loop = asyncio.get_running_loop()
    known = _sessions.get(id(loop))
    if known is not None and known[0] is loop:
        del _sessions[id(loop)]
        await known[1].close()


async def request(
    method: str,
    url: str,
    payload: Any = None,
    *,
    params: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    timeout: float | None = _DEFAULT_TIMEOUT_S,
) -> Any:
    """Send a JSON request and return the decoded JSON answer (None for an empty body).

    Raises ``HTTPStatusError`` on a non-2xx answer and aiohttp's connection errors as they are, so
    the caller can retry a request that an engine lost.
    """
    client_timeout = aiohttp.ClientTimeout(total=timeout)
    async with _session().request(
        method, url, json=payload, params=params, headers=headers, timeout=client_timeout
    ) as response:
        body = await response.read()
        if response.status >= 300:
            raise HTTPStatusError(method, url, response.status, body.decode(errors="replace"))
        if not body:
            return None
        try:
            return await response.json(content_type=None)
        except ValueError:
            return body.decode(errors="replace")


async def post(url: str, payload: Any = None, **kwargs: Any) -> Any:
    """POST ``payload`` as JSON; see ``request``."""
    return await request("POST", url, payload, **kwargs)


async def get(url: str, **kwargs: Any) -> Any:
    """GET and decode JSON; see ``request``."""
    return await request("GET", url, **kwargs)


CONNECTION_ERRORS = (aiohttp.ClientConnectionError, ConnectionError, asyncio.TimeoutError)
