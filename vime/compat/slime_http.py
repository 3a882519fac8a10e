"""SGLang's ``/generate`` idiom served by vLLM: the ``post`` that translated slime plugins call.

slime's custom generate and rollout functions post ``{"text" | "input_ids", "sampling_params",
"return_logprob"}`` to SGLang's ``/generate`` and read ``text``, ``meta_info.output_token_logprobs``
(``[[logprob, token_id, None], ...]``) and ``meta_info.finish_reason.type``. vime-sync rewrites
their ``from slime.utils.http_utils import post`` into this module and leaves the rest of the idiom
as written, so this ``post`` speaks SGLang to its caller and vLLM on the wire:

- ``input_ids`` go to ``/inference/v1/generate`` (token in, token out: the ids the plugin sends are
  the ids the engine sees, turn after turn);
- ``text`` goes to ``/v1/completions`` with ``return_token_ids`` (vLLM tokenizes, as SGLang did);
- either answer comes back as SGLang's ``{"text", "output_ids", "meta_info"}``.

The request may already carry vLLM's spellings (``token_ids``, ``max_tokens``) where vime-sync's
field rules renamed them. Any URL that is not a generate route goes to vime's own ``post``.
"""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from vime.rollout.generate import post_generate
from vime.utils.http_utils import CONNECTION_ERRORS, HTTPStatusError, get, request, run
from vime.utils.http_utils import post as vime_post

__all__ = [
    "CONNECTION_ERRORS",
    "GENERATE_ROUTES",
    "HTTPStatusError",
    "SGLangRequestError",
    "get",
    "post",
    "request",
    "run",
    "to_sglang_response",
    "to_vllm_request",
]

# Where a plugin's generate call may point: SGLang's route, or vLLM's after vime-sync's endpoint rule.
GENERATE_ROUTES = ("/generate", "/inference/v1/generate")
COMPLETIONS_ROUTE = "/v1/completions"
TOKENS_ROUTE = "/inference/v1/generate"

# SGLang sampling-parameter names and vLLM's (the rest are spelled the same by both).
_SAMPLING_RENAMES = {
    "max_new_tokens": "max_tokens",
    "min_new_tokens": "min_tokens",
    "sampling_seed": "seed",
    "no_stop_trim": "include_stop_str_in_output",
}
# Request keys this adapter understands; anything else is an SGLang feature it cannot map.
_KNOWN_KEYS = {
    "text",
    "input_ids",
    "token_ids",
    "sampling_params",
    "return_logprob",
    "rid",
    "request_id",
    "stream",
}
_IGNORED_KEYS = {"logprob_start_len", "top_logprobs_num", "return_text_in_logprobs"}

RETRY_TIMEOUT_S = 900.0  # as vime's --rollout-request-retry-timeout default: engines restart meanwhile


class SGLangRequestError(ValueError):
    """A /generate body this adapter cannot express in vLLM; the message names the key and the fix."""


def _split(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", "")), parts.path.rstrip("/") or "/"


def is_generate_url(url: str) -> bool:
    return _split(url)[1] in GENERATE_ROUTES


def vllm_sampling_params(params: dict[str, Any] | None, return_logprob: bool) -> dict[str, Any]:
    """SGLang's sampling params in vLLM's names; ``logprobs: 0`` (the sampled token's own) when asked."""
    out: dict[str, Any] = {}
    for key, value in (params or {}).items():
        out[_SAMPLING_RENAMES.get(key, key)] = value
    if isinstance(out.get("stop"), str):
        out["stop"] = [out["stop"]]
    if return_logprob:
        out["logprobs"] = 0
    else:
        out.pop("logprobs", None)
    return out


def _requests_nothing(key: str, value: Any, payload: dict[str, Any]) -> bool:
    """A key that asks for no feature: no images, routed experts not wanted (clients send these)."""
    if key == "routed_experts_start_len":
        return not payload.get("return_routed_experts")
    return value is None or value is False or value == [] or value == {}


def to_vllm_request(payload: dict[str, Any]) -> tuple[str, dict[str, Any], bool]:
    """(vLLM route, body, return_logprob) for an SGLang ``/generate`` body."""
    payload = {k: v for k, v in payload.items() if k in _KNOWN_KEYS or not _requests_nothing(k, v, payload)}
    unknown = sorted(set(payload) - _KNOWN_KEYS - _IGNORED_KEYS)
    if unknown:
        raise SGLangRequestError(
            f"SGLang /generate key(s) {', '.join(unknown)} have no vLLM equivalent in vime.compat; "
            "drop them or call vLLM's /inference/v1/generate directly"
        )
    if payload.get("stream"):
        raise SGLangRequestError("streaming /generate is not supported by vime.compat; drop 'stream'")
    return_logprob = bool(payload.get("return_logprob"))
    params = vllm_sampling_params(payload.get("sampling_params"), return_logprob)
    request_id = str(payload.get("rid") or payload.get("request_id") or f"compat-{uuid.uuid4().hex}")
    ids = payload.get("input_ids", payload.get("token_ids"))
    if ids is not None:
        if ids and isinstance(ids[0], list):
            raise SGLangRequestError(
                "batched input_ids (a list of lists) are not supported: post one prompt per call"
            )
        body = {
            "token_ids": [int(t) for t in ids],
            "sampling_params": params,
            "request_id": request_id,
            "output_mode": "text",
        }
        return TOKENS_ROUTE, body, return_logprob
    text = payload.get("text")
    if not isinstance(text, str):
        raise SGLangRequestError(
            "an SGLang /generate body needs 'text' (one string) or 'input_ids' (one list of ids)"
        )
    body = {"prompt": text, **params, "return_token_ids": True, "request_id": request_id}
    if return_logprob:
        body["logprobs"] = 0
    return COMPLETIONS_ROUTE, body, return_logprob


def _log_probs(choice: dict[str, Any]) -> list[float] | None:
    logprobs = choice.get("logprobs")
    if not logprobs:
        return None
    if "content" in logprobs:  # /inference/v1/generate
        return [float(entry["logprob"]) for entry in logprobs["content"] or []]
    return [float(x) if x is not None else 0.0 for x in logprobs.get("token_logprobs") or []]


def to_sglang_response(answer: dict[str, Any], return_logprob: bool, request_id: str) -> dict[str, Any]:
    """vLLM's answer (generate or completions) in SGLang's ``/generate`` shape."""
    choice = answer["choices"][0]
    token_ids = [int(t) for t in choice.get("token_ids") or []]
    finish: dict[str, Any] = {"type": choice.get("finish_reason") or "abort"}
    if choice.get("stop_reason") is not None:
        finish["matched"] = choice["stop_reason"]
    usage = answer.get("usage") or {}
    meta: dict[str, Any] = {
        "id": request_id,
        "finish_reason": finish,
        "prompt_tokens": usage.get("prompt_tokens", 0),
        "completion_tokens": len(token_ids),
        "cached_tokens": ((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0),
    }
    versions = choice.get("weight_versions") or []
    if versions:
        meta["weight_version"] = str(versions[-1].get("version"))
    if return_logprob:
        log_probs = _log_probs(choice)
        if log_probs is None or len(log_probs) != len(token_ids):
            raise RuntimeError(
                f"vLLM returned {len(token_ids)} tokens but "
                f"{'no' if log_probs is None else len(log_probs)} log probabilities"
            )
        meta["output_token_logprobs"] = [
            [lp, tid, None] for lp, tid in zip(log_probs, token_ids, strict=True)
        ]
    return {"text": choice.get("text") or "", "output_ids": token_ids, "meta_info": meta}


async def post(url: str, payload: Any = None, **kwargs: Any) -> Any:
    """slime's ``post``: an SGLang generate call is served by vLLM and answered in SGLang's shape."""
    if not is_generate_url(url) or not isinstance(payload, dict):
        return await vime_post(url, payload, **kwargs)
    route, body, return_logprob = to_vllm_request(payload)
    base, _ = _split(url)
    answer = await post_generate(
        base + route, body, retry_timeout_s=RETRY_TIMEOUT_S, headers=kwargs.get("headers")
    )
    return to_sglang_response(answer, return_logprob, body["request_id"])
