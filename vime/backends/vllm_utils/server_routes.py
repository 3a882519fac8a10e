"""vime's control routes inside vLLM's API server: a weight update in one HTTP call.

Added to ``vllm serve`` as ``--middleware vime.backends.vllm_utils.server_routes.VimeRoutes`` (a
documented vLLM option in 0.26 and 0.32 alike; a class is installed as plain ASGI middleware, so
every other request passes through untouched). Why: through vLLM's public routes an update is
``/pause`` → ``/collective_rpc`` → ``/reset_prefix_cache`` → ``/resume``, four round trips, and
``AsyncLLM.pause_generation`` adds a fixed 20 ms sleep while the separate reset walks every KV
block a second time (measured on an H200: pause + reset + resume ≈ 47 ms against a 1.5 ms copy of
a 1.5B model). Here the same steps run in the server process against the engine client:

- ``GET /vime/info``: what this server offers (so clients detect the routes).
- ``POST /vime/update_weights`` ``{"method", "kwargs", "pause", "pause_mode", "resume", "version"}``:
  pause the scheduler with its caches cleared (``pause``: ``auto`` = only when the engine is awake —
  a sleeping engine was paused and cleared by ``/sleep`` — or ``always`` / ``never``), run the
  worker method ``method`` through ``collective_rpc``, tag ``version`` where the engine can, and
  resume (``resume``: ``auto`` = if this call paused; ``false`` keeps it paused for the next bucket;
  ``true`` resumes what an earlier call paused). Answers
  ``{"results", "paused", "version_tagged", "seconds"}``; the engine is resumed on failure too.
"""

from __future__ import annotations

import json
import time
from typing import Any

PAUSE_CHOICES = ("auto", "always", "never")
PAUSE_MODES = ("abort", "wait", "keep")
ROUTES = ("/vime/info", "/vime/update_weights", "/vime/lora_adapter")
UPDATE_FIELDS = ("method", "kwargs", "pause", "pause_mode", "resume", "version")
ADAPTER_FIELDS = ("name", "path", "pause_mode", "version")
# generate routes whose requests are served by the loaded adapter when they name no other model
ADAPTED_ROUTES = ("/inference/v1/generate", "/v1/completions", "/v1/chat/completions")


class RouteError(ValueError):
    """A request this route refuses (HTTP 400)."""


class VimeRoutes:
    """ASGI middleware answering ``/vime/*`` and passing everything else to vLLM's app."""

    def __init__(self, app):
        self.app = app
        self.adapter: str | None = None  # set by /vime/lora_adapter: requests naming no model use it

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not scope["path"].startswith("/vime/"):
            if self.adapter is not None and scope["type"] == "http" and scope["path"] in ADAPTED_ROUTES:
                receive = await _with_model(scope, receive, self.adapter)
            await self.app(scope, receive, send)
            return
        from starlette.requests import Request
        from starlette.responses import JSONResponse

        request = Request(scope, receive)
        engine = getattr(scope["app"].state, "engine_client", None)
        try:
            if scope["path"] == "/vime/info" and request.method == "GET":
                body: dict[str, Any] = info()
            elif scope["path"] == "/vime/update_weights" and request.method == "POST":
                body = await update_weights(engine, await _json(request))
            elif scope["path"] == "/vime/lora_adapter" and request.method == "POST":
                body = await load_adapter(engine, scope["app"].state, await _json(request))
                self.adapter = body["name"]
            else:
                response = JSONResponse({"error": f"no route {request.method} {scope['path']}"}, 404)
                await response(scope, receive, send)
                return
            response = JSONResponse(body)
        except RouteError as exc:
            response = JSONResponse({"error": str(exc)}, 400)
        except Exception as exc:  # the caller gets the reason; the server keeps serving
            response = JSONResponse({"error": f"{type(exc).__name__}: {exc}"}, 500)
        await response(scope, receive, send)


def info() -> dict[str, Any]:
    import vllm

    return {"routes": list(ROUTES), "vllm": vllm.__version__}


async def _json(request) -> dict[str, Any]:
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError as exc:
        raise RouteError(f"body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise RouteError("body must be a JSON object")
    return body


async def update_weights(engine, body: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(body) - set(UPDATE_FIELDS))
    if unknown:
        raise RouteError(f"unknown field {unknown[0]!r}: the fields are {', '.join(UPDATE_FIELDS)}")
    method, kwargs = body.get("method"), body.get("kwargs") or {}
    pause, mode = body.get("pause", "auto"), body.get("pause_mode", "abort")
    if not isinstance(method, str) or not method:
        raise RouteError('"method" (a worker method name, e.g. vime_load_ipc) is required')
    if pause not in PAUSE_CHOICES:
        raise RouteError(f'"pause" must be one of {PAUSE_CHOICES}, not {pause!r}')
    if body.get("resume", "auto") not in ("auto", True, False):
        raise RouteError('"resume" must be "auto", true or false')
    if mode not in PAUSE_MODES:
        raise RouteError(f'"pause_mode" must be one of {PAUSE_MODES}, not {mode!r}')
    if engine is None:
        raise RuntimeError("this server has no engine client")
    seconds: dict[str, float] = {}
    mark = time.perf_counter()
    paused = pause == "always" or (pause == "auto" and not await engine.is_sleeping())
    if paused:
        await _pause(engine, mode)
    seconds["pause"] = time.perf_counter() - mark
    tagged, done = False, False
    try:
        mark = time.perf_counter()
        results = await engine.collective_rpc(method, kwargs=kwargs)
        seconds["rpc"] = time.perf_counter() - mark
        version = body.get("version")
        if version is not None and hasattr(engine, "update_weight_version"):
            await engine.update_weight_version(str(version))
            tagged = True
        done = True
    finally:
        mark = time.perf_counter()
        resume = body.get("resume", "auto")
        keep_paused = resume is False and done  # a failure never leaves paused what this call paused
        if (paused and not keep_paused) or resume is True:
            await _resume(engine)
        seconds["resume"] = time.perf_counter() - mark
    return {"results": results, "paused": paused, "version_tagged": tagged, "seconds": seconds}


async def _pause(engine, mode: str) -> None:
    """Pause and clear the prefix cache once, without ``pause_generation``'s fixed 20 ms sleep."""
    core = getattr(engine, "engine_core", None)
    if core is not None and hasattr(core, "pause_scheduler_async"):
        await core.pause_scheduler_async(mode=mode, clear_cache=True)
    else:
        await engine.pause_generation(mode=mode, clear_cache=True)


async def _resume(engine) -> None:
    core = getattr(engine, "engine_core", None)
    if core is not None and hasattr(core, "resume_scheduler_async"):
        await core.resume_scheduler_async()
    else:
        await engine.resume_generation()


async def load_adapter(engine, state, body: dict[str, Any]) -> dict[str, Any]:
    """Load (or replace in place) the LoRA adapter at ``path`` under ``name``; from then on every generate
    request that names no model is served by base + adapter. Pause (caches cleared: their blocks were
    computed with the old adapter; skipped when the engine sleeps, which did both) → load → tag
    ``version`` → resume."""
    unknown = sorted(set(body) - set(ADAPTER_FIELDS))
    if unknown:
        raise RouteError(f"unknown field {unknown[0]!r}: the fields are {', '.join(ADAPTER_FIELDS)}")
    name, path, mode = body.get("name"), body.get("path"), body.get("pause_mode", "wait")
    if not isinstance(name, str) or not name or not isinstance(path, str) or not path:
        raise RouteError('"name" and "path" (a PEFT adapter directory) are required')
    if mode not in PAUSE_MODES:
        raise RouteError(f'"pause_mode" must be one of {PAUSE_MODES}, not {mode!r}')
    models = getattr(state, "openai_serving_models", None)
    if engine is None or models is None:
        raise RuntimeError("this server has no engine client or model registry")
    if engine.vllm_config.lora_config is None:
        raise RouteError("this server was started without --enable-lora: it cannot serve adapters")
    request_cls = _load_request_class()
    seconds: dict[str, float] = {}
    mark = time.perf_counter()
    paused = not await engine.is_sleeping()  # a sleeping engine was paused and cleared by /sleep
    if paused:
        await _pause(engine, mode)
    seconds["pause"] = time.perf_counter() - mark
    tagged = False
    try:
        mark = time.perf_counter()
        if "load_inplace" in request_cls.model_fields:
            request = request_cls(lora_name=name, lora_path=path, load_inplace=True)
        else:  # an older vLLM: drop the adapter, then load it again (a new id; the caches were cleared)
            if name in getattr(models, "lora_requests", {}):
                del models.lora_requests[name]
            request = request_cls(lora_name=name, lora_path=path)
        answer = await models.load_lora_adapter(request)
        if not isinstance(answer, str):  # an ErrorResponse
            raise RuntimeError(f"loading adapter {name!r} from {path}: {answer.error.message}")
        seconds["load"] = time.perf_counter() - mark
        if body.get("version") is not None and hasattr(engine, "update_weight_version"):
            await engine.update_weight_version(str(body["version"]))
            tagged = True
    finally:
        mark = time.perf_counter()
        if paused:
            await _resume(engine)
        seconds["resume"] = time.perf_counter() - mark
    return {"name": name, "path": path, "paused": paused, "version_tagged": tagged, "seconds": seconds}


def _load_request_class():
    """vLLM's ``LoadLoRAAdapterRequest`` (0.32 keeps it under ``serve.lora``; older releases in ``openai``)."""
    try:
        from vllm.entrypoints.serve.lora.protocol import LoadLoRAAdapterRequest
    except ImportError:
        from vllm.entrypoints.openai.protocol import LoadLoRAAdapterRequest
    return LoadLoRAAdapterRequest


async def _with_model(scope, receive, model: str):
    """A ``receive`` that replays the request body with ``"model": model`` when it names none."""
    chunks, more = [], True
    while more:
        message = await receive()
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    raw = b"".join(chunks)
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        body = None
    if isinstance(body, dict) and not body.get("model"):
        body["model"] = model
        raw = json.dumps(body).encode()
        scope["headers"] = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"] + [
            (b"content-length", str(len(raw)).encode())
        ]
    sent = False

    async def replay():
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": raw, "more_body": False}

    return replay
