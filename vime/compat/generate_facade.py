"""SGLang's ``/generate`` served in the plugin's own process, for third-party clients that post it.

vime-sync rewrites slime's own code onto vLLM, but a package a plugin depends on is not translated:
strands-sglang's ``SGLangModel`` posts SGLang's ``/generate`` (``input_ids``, ``return_logprob``)
to ``http://{args.sglang_router_ip}:{args.sglang_router_port}`` and reads SGLang's answer. The
module rule for ``strands_sglang.get_client_from_slime_args`` points at this module's function of
that name: it starts (once per engine address and process) a small local HTTP server that answers
``POST /generate`` and ``GET /health`` in SGLang's shape, sending each request to vime's vLLM
router or engine through ``vime.compat.slime_http`` (token in, token out), and returns
strands-sglang's own client pointed at it.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

from vime.compat.slime_http import SGLangRequestError, to_sglang_response, to_vllm_request
from vime.compat.slime_utils import get_rollout_num_engines
from vime.rollout.generate import post_generate

RETRY_TIMEOUT_S = 900.0


class GenerateFacade:
    """A local SGLang ``/generate`` in a background thread, in front of a vLLM router or engine."""

    def __init__(self, engine_url: str) -> None:
        self.engine_url = engine_url.rstrip("/")
        self.requests = 0

    async def _generate(self, request: Any) -> Any:
        from aiohttp import web

        started = time.monotonic()
        try:
            route, body, return_logprob = to_vllm_request(await request.json())
        except SGLangRequestError as exc:
            return web.json_response({"error": {"message": str(exc)}}, status=400)
        answer = await post_generate(self.engine_url + route, body, retry_timeout_s=RETRY_TIMEOUT_S)
        self.requests += 1
        out = to_sglang_response(answer, return_logprob, body["request_id"])
        out["meta_info"]["e2e_latency"] = time.monotonic() - started
        return web.json_response(out)

    async def _health(self, _request: Any) -> Any:
        from aiohttp import web

        return web.Response(text="ok")

    def start(self) -> GenerateFacade:
        from aiohttp import web

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.loop = asyncio.new_event_loop()
        app = web.Application(client_max_size=256 * 1024**2)
        app.router.add_post("/generate", self._generate)
        app.router.add_get("/health", self._health)
        self.runner = web.AppRunner(app, access_log=None)
        self.loop.run_until_complete(self.runner.setup())
        self.loop.run_until_complete(web.TCPSite(self.runner, "127.0.0.1", self.port).start())
        threading.Thread(target=self.loop.run_forever, name="vime-generate-facade", daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


_FACADES: dict[str, GenerateFacade] = {}
_LOCK = threading.Lock()


def facade_for(engine_url: str) -> GenerateFacade:
    """The process's facade in front of ``engine_url`` (started on first use)."""
    with _LOCK:
        if engine_url not in _FACADES:
            _FACADES[engine_url] = GenerateFacade(engine_url).start()
        return _FACADES[engine_url]


def get_client_from_slime_args(
    args: Any,
    *,
    timeout: float | None = 900.0,
    connect_timeout: float = 5.0,
    max_retries: int = 60,
    retry_delay: float = 1.0,
) -> Any:
    """strands-sglang's ``get_client_from_slime_args`` for vime's args: its ``SGLangClient``, pointed
    at this process's SGLang facade in front of vime's router (``vllm_router_ip/port``); the pool
    is sized as slime sizes it (server concurrency times engines)."""
    from strands_sglang import get_client

    facade = facade_for(f"http://{args.vllm_router_ip}:{args.vllm_router_port}")
    return get_client(
        base_url=facade.url,
        max_connections=int(args.vllm_server_concurrency * get_rollout_num_engines(args)),
        timeout=timeout,
        connect_timeout=connect_timeout,
        max_retries=max_retries,
        retry_delay=retry_delay,
    )
