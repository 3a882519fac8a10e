"""The engine a generate contract hands a plugin, which counts and records every generate call.

A plugin that never reaches an engine must not pass: with no engine it can still return a sample
with a plausible status. So the plugin's ``args.vllm_router_ip/port`` point at a
:class:`ContractEngine`, which is either

- a MOCK of vLLM's generate routes (no ``VIME_CONTRACT_ENGINE_URL``): ``/inference/v1/generate``
  (token in, token out), ``/v1/completions`` (text, through vime.compat) and
  ``/v1/chat/completions``, answering scripted finish reasons with short token runs; or
- a counting proxy in front of the real engine or router at ``VIME_CONTRACT_ENGINE_URL``: every
  request is forwarded, and a generate request counts only when the engine answered it (an
  unreachable engine is answered 424, which fails fast instead of retrying).

``requests`` holds what each answered generate call sent; ``answers`` the finish reason of each.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from typing import Any

GENERATE_ROUTES = ("/inference/v1/generate", "/v1/completions", "/v1/chat/completions", "/generate")


def _finish_reason(answer: Any) -> str | None:
    if not isinstance(answer, dict):
        return None
    choices = answer.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0].get("finish_reason")
    finish = (answer.get("meta_info") or {}).get("finish_reason")  # SGLang's shape
    return finish.get("type") if isinstance(finish, dict) else finish


class ContractEngine:
    """Serve on 127.0.0.1 in a thread; ``settings`` are the args that point a plugin at it."""

    def __init__(self, upstream: str | None = None, finish_reasons: list[str] | None = None) -> None:
        self.upstream = upstream.rstrip("/") if upstream else None
        self.finish_reasons = list(finish_reasons or [])
        self.requests: list[tuple[str, dict[str, Any]]] = []  # (route, body) of answered generate calls
        self.answers: list[str | None] = []

    @property
    def calls(self) -> int:
        return len(self.requests)

    @property
    def settings(self) -> dict[str, Any]:
        return {"vllm_router_ip": "127.0.0.1", "vllm_router_port": self.port}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # ----- the mock --------------------------------------------------------------------------
    async def _mock(self, request):
        from aiohttp import web

        if request.path not in GENERATE_ROUTES[:3]:
            return web.json_response(
                {"error": f"the contract's engine mock has no route {request.path}"}, status=404
            )
        body = await request.json()
        reason = self.finish_reasons.pop(0) if self.finish_reasons else "stop"
        params = body.get("sampling_params", body)
        count = 0 if reason == "abort" else min(3, int(params.get("max_tokens") or 3))
        tokens = [40 + i for i in range(count)]
        log_probs = [-0.5 - i for i in range(count)]
        text = "".join(chr(t) for t in tokens)
        choice: dict[str, Any] = {"index": 0, "token_ids": tokens, "finish_reason": reason, "text": text}
        if request.path == "/v1/completions":
            choice["logprobs"] = {"token_logprobs": log_probs} if body.get("logprobs") is not None else None
        elif request.path == "/v1/chat/completions":
            choice = {"index": 0, "finish_reason": reason, "message": {"role": "assistant", "content": text}}
        else:
            choice["logprobs"] = {"content": [{"logprob": x} for x in log_probs]}
            choice["weight_versions"] = [{"version": "7", "start": 0, "end": count}]
        self.requests.append((request.path, body))
        self.answers.append(reason)
        return web.json_response(
            {"choices": [choice], "usage": {"prompt_tokens": 1, "completion_tokens": count}}
        )

    # ----- the proxy -------------------------------------------------------------------------
    async def _proxy(self, request):
        import aiohttp
        from aiohttp import web

        raw = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        try:
            async with self.session.request(
                request.method, self.upstream + request.path_qs, data=raw, headers=headers
            ) as answer:
                payload = await answer.read()
                status, content_type = answer.status, answer.content_type
        except aiohttp.ClientError as exc:
            return web.json_response(
                {"error": f"the contract's engine proxy cannot reach {self.upstream}: {exc}"}, status=424
            )
        if request.method == "POST" and request.path in GENERATE_ROUTES and status < 300:
            try:
                body, answer_json = json.loads(raw or b"{}"), json.loads(payload or b"{}")
            except ValueError:  # a streamed answer: counted, its finish reason unknown
                body, answer_json = {}, None
            self.requests.append((request.path, body))
            self.answers.append(_finish_reason(answer_json))
        return web.Response(body=payload, status=status, content_type=content_type)

    # ----- lifetime --------------------------------------------------------------------------
    def __enter__(self) -> ContractEngine:
        from aiohttp import web

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.loop = asyncio.new_event_loop()
        app = web.Application(client_max_size=64 * 1024**2)
        app.router.add_route("*", "/{tail:.*}", self._proxy if self.upstream else self._mock)
        self.runner = web.AppRunner(app)
        self.loop.run_until_complete(self.runner.setup())
        self.loop.run_until_complete(web.TCPSite(self.runner, "127.0.0.1", self.port).start())
        if self.upstream:
            self.session = self.loop.run_until_complete(self._session())
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        return self

    async def _session(self):
        import aiohttp

        return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600))

    def __exit__(self, *exc: object) -> None:
        async def close() -> None:
            if self.upstream:
                await self.session.close()
            await self.runner.cleanup()

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


def prompt_ids_sent(engine: ContractEngine, tokenizer: Any) -> set[tuple[int, ...]]:
    """The prompt of every answered generate call, as token ids (text and chat prompts encoded)."""
    sent: set[tuple[int, ...]] = set()
    for _route, body in engine.requests:
        ids = body.get("token_ids") or body.get("input_ids")
        if isinstance(ids, list) and ids and isinstance(ids[0], int):
            sent.add(tuple(ids))
            continue
        text = body.get("prompt", body.get("text"))
        if isinstance(body.get("messages"), list):
            text = tokenizer.apply_chat_template(body["messages"], tokenize=False, add_generation_prompt=True)
        if isinstance(text, str):
            sent.add(tuple(tokenizer.encode(text, add_special_tokens=False)))
    return sent
