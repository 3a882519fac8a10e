"""The HTTP control plane of one vLLM server: everything vime asks an engine to do besides generate.

Control calls go to each engine directly, never through vllm-router (the router forwards control
routes to one backend only). Routes are those of ``vllm serve`` 0.32 with ``VLLM_SERVER_DEV_MODE=1``.
"""

from __future__ import annotations

import logging
from typing import Any

import requests

logger = logging.getLogger(__name__)

# The server prefixes the id a client sends with the name of the route that created the request.
SERVER_REQUEST_ID_PREFIX = "generate-tokens-"
PAUSE_MODES = ("abort", "wait", "keep")


def server_request_id(request_id: str) -> str:
    """The id ``/abort_requests`` needs for a request sent to ``/inference/v1/generate`` as ``request_id``."""
    return (
        request_id
        if request_id.startswith(SERVER_REQUEST_ID_PREFIX)
        else SERVER_REQUEST_ID_PREFIX + request_id
    )


class EngineControlError(RuntimeError):
    """A control call that the server refused or could not answer."""


class EngineClient:
    """Synchronous client for one server at ``url`` (``http://host:port``)."""

    def __init__(self, url: str, timeout_s: float = 600.0):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self._http = requests.Session()
        self._routes: set[str] | None = None
        self._vime_routes: bool | None = None

    def _call(
        self, method: str, route: str, *, json: Any = None, params: dict | None = None, timeout=None
    ) -> Any:
        try:
            response = self._http.request(
                method, f"{self.url}{route}", json=json, params=params, timeout=timeout or self.timeout_s
            )
        except requests.RequestException as exc:
            raise EngineControlError(f"{method} {self.url}{route} failed: {exc}") from exc
        if response.status_code >= 300:
            raise EngineControlError(
                f"{method} {self.url}{route} answered HTTP {response.status_code}: {response.text[:300]}"
            )
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            return response.text

    def routes(self) -> set[str]:
        """The paths this server serves (from ``/openapi.json``, read once)."""
        if self._routes is None:
            spec = self._call("GET", "/openapi.json", timeout=30) or {}
            self._routes = set((spec.get("paths") or {}).keys()) if isinstance(spec, dict) else set()
        return self._routes

    def has_vime_routes(self) -> bool:
        """Whether the server runs vime's ``/vime/*`` routes (servers vime starts do; others may not)."""
        if self._vime_routes is None:
            try:
                answer = self._http.get(f"{self.url}/vime/info", timeout=30)
                self._vime_routes = answer.status_code == 200 and "/vime/update_weights" in answer.json().get(
                    "routes", []
                )
            except (requests.RequestException, ValueError):
                self._vime_routes = False
        return self._vime_routes

    # ----- liveness -----------------------------------------------------------------------------
    def health(self, timeout_s: float = 10.0) -> bool:
        try:
            return self._http.get(f"{self.url}/health", timeout=timeout_s).status_code == 200
        except requests.RequestException:
            return False

    # ----- generation -------------------------------------------------------------------------
    def generate(self, token_ids: list[int], sampling_params: dict, request_id: str | None = None) -> dict:
        """Token in, token out: ``POST /inference/v1/generate``."""
        payload: dict[str, Any] = {"token_ids": list(token_ids), "sampling_params": sampling_params}
        if request_id is not None:
            payload["request_id"] = request_id
        return self._call("POST", "/inference/v1/generate", json=payload)

    # ----- scheduling control -----------------------------------------------------------------------
    def pause(self, mode: str = "wait") -> None:
        """Stop scheduling: ``abort`` in-flight requests, ``wait`` for them, or ``keep`` them frozen."""
        if mode not in PAUSE_MODES:
            raise ValueError(f"pause mode {mode!r} is not one of {PAUSE_MODES}")
        self._call("POST", "/pause", params={"mode": mode})

    def resume(self) -> None:
        self._call("POST", "/resume")

    def is_paused(self) -> bool:
        return bool(self._call("GET", "/is_paused")["is_paused"])

    def abort(self, request_ids: list[str] | None = None) -> int:
        """Abort the given requests (ids as sent to generate, or already prefixed), or all when None."""
        body = {"request_ids": [server_request_id(r) for r in request_ids]} if request_ids else {}
        answer = self._call("POST", "/abort_requests", json=body) or {}
        return int(answer.get("aborted", 0))

    def reset_prefix_cache(self) -> None:
        self._call("POST", "/reset_prefix_cache")

    # ----- weights ------------------------------------------------------------------------------
    def collective_rpc(
        self, method: str, kwargs: dict[str, str] | None = None, timeout_s: float | None = None
    ):
        """Call ``method`` on every worker of the engine (a method of the worker or its extension class)."""
        answer = self._call(
            "POST", "/collective_rpc", json={"method": method, "kwargs": kwargs or {}}, timeout=timeout_s
        )
        return (answer or {}).get("results")

    def vime_update_weights(
        self,
        method: str,
        kwargs: dict[str, Any] | None = None,
        *,
        pause: str = "auto",
        pause_mode: str = "wait",
        resume: str | bool = "auto",
        version: str | None = None,
    ) -> dict[str, Any]:
        """Pause → worker ``method`` → tag ``version`` → resume, in one call (``server_routes``)."""
        body = {
            "method": method,
            "kwargs": kwargs or {},
            "pause": pause,
            "pause_mode": pause_mode,
            "resume": resume,
        }
        if version is not None:
            body["version"] = str(version)
        return self._call("POST", "/vime/update_weights", json=body)

    def reload_weights_from_disk(self, path: str) -> None:
        """Load the safetensors checkpoint in directory ``path`` into the running model, in place."""
        self.collective_rpc("vime_reload_weights", {"weights_path": str(path)})

    def weights_checksums(self) -> dict[str, str]:
        """Per-parameter digests from vLLM's ``/weight_checker`` (two engines with equal weights agree)."""
        return self._call("POST", "/weight_checker", json={"action": "checksum"})["checksums"]

    def update_weight_version(self, version: str) -> None:
        """Tag the outputs generated from now on (``weight_versions`` in generate answers)."""
        self._call("POST", "/update_weight_version", json={"new_version": str(version)})

    def tag_weight_version(self, version: str) -> bool:
        """Tag later outputs with ``version`` where the server can (0.32: yes; 0.26: no route); returns whether it did."""
        if "/update_weight_version" not in self.routes():
            logger.info("%s has no /update_weight_version: version %s kept by vime only", self.url, version)
            return False
        self.update_weight_version(version)
        return True

    def weight_version(self) -> str | None:
        return self._call("GET", "/weight_info").get("weight_version")

    def update_weights_from_disk(
        self, path: str, version: str | None = None, pause_mode: str = "wait"
    ) -> None:
        """Pause → reload → reset prefix cache → tag version → resume, so no request mixes weights silently.

        One call on servers with vime's routes (the pause clears the prefix cache), five otherwise.
        """
        if self.has_vime_routes():
            self.vime_update_weights(
                "vime_reload_weights",
                {"weights_path": str(path)},
                pause="always",
                pause_mode=pause_mode,
                version=version,
            )
            return
        self.pause(pause_mode)
        try:
            self.reload_weights_from_disk(path)
            self.reset_prefix_cache()
            if version is not None:
                self.update_weight_version(version)
        finally:
            self.resume()

    def update_lora_adapter(
        self, name: str, path: str, version: str | None = None, pause_mode: str = "wait"
    ) -> dict[str, Any]:
        """Load the PEFT adapter in ``path`` as ``name`` (in place), in one call: pause → load → tag → resume.

        Afterwards generate requests that name no model are served by base + adapter (vime's route
        rewrites them), so rollout code and plugins need no change.
        """
        if not self.has_vime_routes():
            raise EngineControlError(
                f"{self.url} has no /vime/lora_adapter route (not started by vime): use --lora-sync merged"
            )
        body: dict[str, Any] = {"name": name, "path": str(path), "pause_mode": pause_mode}
        if version is not None:
            body["version"] = str(version)
        return self._call("POST", "/vime/lora_adapter", json=body)

    # ----- GPU weight transfer (vLLM's weight-transfer API; needs --weight-transfer-config) --------------
    def init_weight_transfer_engine(self, init_info: dict[str, Any]) -> None:
        self._call("POST", "/init_weight_transfer_engine", json={"init_info": init_info})

    def start_weight_update(self) -> None:
        self._call("POST", "/start_weight_update")

    def update_weights(self, update_info: dict[str, Any]) -> None:
        self._call("POST", "/update_weights", json={"update_info": update_info})

    def finish_weight_update(self, version: str | None = None) -> None:
        self._call("POST", "/finish_weight_update", json={"weight_version": version})

    # ----- memory ---------------------------------------------------------------------------------
    def sleep(self, level: int = 1) -> None:
        self._call("POST", "/sleep", params={"level": level})

    def wake_up(self, tags: list[str] | None = None) -> None:
        self._call("POST", "/wake_up", params={"tags": tags} if tags else None)

    def is_sleeping(self) -> bool:
        return bool(self._call("GET", "/is_sleeping")["is_sleeping"])
