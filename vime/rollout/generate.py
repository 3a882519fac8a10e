"""One token-in/token-out generate call per sample, straight to an engine or via vllm-router, retried across engine deaths.

With ``--rollout-routing direct`` (the default) each attempt goes to an engine picked from the
router's worker list (``vime/rollout/engine_routing.py``); with ``router`` it goes through the
router. A request is sent as ``POST /inference/v1/generate {token_ids, sampling_params, request_id}``; the
answer's ``choices[0]`` carries the new token ids, their log probabilities, the finish reason
(stop / length / abort) and the weight versions that produced them. Nothing is written on the
Sample until an answer arrives, so a request lost to a dead engine is simply sent again (to a
healthy engine, or to the restarted one): no token is counted twice and no sample is lost.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from argparse import Namespace
from typing import Any

from vime.rollout.engine_routing import EngineRoute, engine_picker, prompt_affinity
from vime.rollout.generate_state import GenerateState
from vime.rollout.rollout_config import RolloutConfig
from vime.rollout.sampling_params import build_sampling_params as build_sampling_params  # its old home
from vime.utils.http_utils import CONNECTION_ERRORS, HTTPStatusError, post
from vime.utils.types import Sample
from vime.utils.weight_versions import record_spans

logger = logging.getLogger(__name__)

# HTTP answers that mean "the engine behind the router is gone / not there yet", not "bad request".
RETRYABLE_STATUS = {500, 502, 503, 504}


def router_url(args: Namespace, route: str = "") -> str:
    cfg = RolloutConfig.from_args(args)
    ip, port = cfg.vllm_router_ip, cfg.vllm_router_port
    if ip is None or port is None:
        raise RuntimeError(
            "args.vllm_router_ip / vllm_router_port are unset: start a RolloutManager (it sets them) "
            "or pass --vllm-router-ip/--vllm-router-port"
        )
    return f"http://{ip}:{port}{route}"


def prompt_token_ids(sample: Sample, tokenizer: Any) -> list[int]:
    """The ids to send: the sample's tokens when it has some (a continued partial sample), else its prompt encoded."""
    if sample.tokens:
        return list(sample.tokens)
    if isinstance(sample.prompt, list):
        # text first: with tokenize=True, transformers 5 returns a BatchEncoding, not a list of ids
        text = tokenizer.apply_chat_template(sample.prompt, tokenize=False, add_generation_prompt=True)
        return tokenizer.encode(text, add_special_tokens=False)
    return tokenizer.encode(sample.prompt, add_special_tokens=False)


async def post_generate(
    url: str | EngineRoute,
    payload: dict[str, Any],
    *,
    retry_timeout_s: float,
    is_aborted=lambda: False,
    headers: dict[str, str] | None = None,
    on_retry=lambda: None,
) -> dict[str, Any] | None:
    """POST a generate request; retry while engines are down. None when the rollout aborted meanwhile.

    ``url`` is one fixed address (the router, or an engine), or an ``EngineRoute`` that picks an
    engine per attempt: a failed attempt marks its engine, so the next one goes elsewhere.
    """
    route = url if isinstance(url, EngineRoute) else None
    deadline = time.monotonic() + retry_timeout_s
    delay = 0.5
    attempt = 0
    while True:
        attempt += 1
        engine, failed = None, False
        try:
            if route is not None:
                engine = await route.acquire()
            return await post(route.url(engine) if route else url, payload, headers=headers)
        except HTTPStatusError as exc:
            if exc.status not in RETRYABLE_STATUS:
                raise
            error: Exception = exc
            failed = True
        except CONNECTION_ERRORS as exc:
            error = exc
            failed = True
        finally:
            if route is not None and engine is not None:
                route.release(engine, failed=failed)
        if is_aborted():
            return None
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"generate request lost {attempt} times, giving up after {retry_timeout_s:.0f}s "
                f"(raise --rollout-request-retry-timeout or check the engines): {error}"
            ) from error
        on_retry()
        if attempt == 1:
            logger.warning("generate request failed (%s); retrying until an engine takes it", error)
        payload = {**payload, "request_id": f"{payload.get('request_id', 'vime')}-r{attempt}"}
        await asyncio.sleep(delay)
        delay = min(delay * 2, 5.0)


# vllm.sampling_params.RequestOutputKind.FINAL_ONLY (an enum vLLM takes by value in JSON)
FINAL_ONLY = 2


def engine_request_params(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` as vime sends them on the token route: one answer per request, no server-side text.

    - ``output_kind`` FINAL_ONLY: a request that does not stream needs its output once, at the end.
      vLLM 0.32's token route sets this itself; 0.26's leaves the default (cumulative), which
      rebuilds every request's whole output and wakes its handler at every engine step.
    - ``detokenize`` off unless stop strings need the text (vLLM refuses ``stop`` without it): the
      route answers with ids, and vime decodes the text itself (``apply_generate_output``).
    """
    out = {**params, "output_kind": FINAL_ONLY}
    if not params.get("stop"):
        out["detokenize"] = False
    return out


def apply_generate_output(sample: Sample, choice: dict[str, Any], tokenizer: Any) -> Sample:
    """Append a generate answer's tokens, log probabilities, versions and finish reason to ``sample``."""
    tokens = [int(t) for t in choice.get("token_ids") or []]
    content = (choice.get("logprobs") or {}).get("content") or []
    log_probs = [float(item["logprob"]) for item in content] if content else None
    if log_probs is not None and len(log_probs) != len(tokens):
        raise RuntimeError(f"engine returned {len(tokens)} tokens but {len(log_probs)} log probabilities")
    offset = sample.response_length
    if tokens:
        text = tokenizer.decode(tokens, skip_special_tokens=False) if tokenizer is not None else None
        sample.append_response_tokens(
            tokens, log_probs if log_probs is not None else [0.0] * len(tokens), text=text
        )
    for span in choice.get("weight_versions") or []:
        sample.weight_versions.append(str(span.get("version")))
    record_spans(sample, choice.get("weight_versions"), offset)  # per token: which weights wrote it
    sample.apply_finish_reason(choice.get("finish_reason"))
    return sample


async def generate(
    args: Namespace, sample: Sample, sampling_params: dict[str, Any], evaluation: bool = False
) -> Sample:
    """vime's default generate hook: one request for ``sample`` (``--custom-generate-function-path`` replaces it).

    ``max_tokens`` shrinks to what the context limit leaves (``--rollout-max-context-len``, or
    ``--eval-max-context-len`` when ``evaluation``); a sample that already fills it is truncated.
    """
    state = GenerateState(args)
    if sample.status not in (Sample.Status.PENDING, Sample.Status.ABORTED):
        raise ValueError(
            f"sample {sample.index} has status {sample.status.value}: only pending or aborted samples are generated"
        )
    prompt_ids = prompt_token_ids(sample, state.tokenizer)
    params = dict(sampling_params)
    params["max_tokens"] = int(params["max_tokens"]) - sample.response_length
    if params["max_tokens"] < 0:
        raise ValueError(
            f"sample {sample.index} already has {sample.response_length} response tokens, over max_tokens"
        )
    params["max_tokens"] = max(0, state.context_limits.fit(params["max_tokens"], len(prompt_ids), evaluation))
    if not sample.tokens:
        sample.tokens = list(prompt_ids)
    if params["max_tokens"] == 0:
        sample.status = Sample.Status.TRUNCATED
        return sample
    payload = {
        "token_ids": prompt_ids,
        "sampling_params": engine_request_params(params),
        "request_id": f"vime-{uuid.uuid4().hex}",
    }
    # vllm-router's consistent_hash policy keys on x-session-id (slime: X-SMG-Routing-Key)
    headers = {"x-session-id": sample.session_id} if sample.session_id else None
    cfg = RolloutConfig.from_args(args)
    if cfg.rollout_routing == "router":
        target: str | EngineRoute = router_url(args, "/inference/v1/generate")
    else:
        picker = engine_picker(router_url(args))
        target = EngineRoute(picker, "/inference/v1/generate", sample.session_id, prompt_affinity(prompt_ids))
    output = await post_generate(
        target,
        payload,
        headers=headers,
        retry_timeout_s=float(cfg.rollout_request_retry_timeout),
        is_aborted=lambda: state.aborted,
        on_retry=state.note_retry,
    )
    if output is None:
        sample.status = Sample.Status.ABORTED
        return sample
    return apply_generate_output(sample, output["choices"][0], state.tokenizer)
