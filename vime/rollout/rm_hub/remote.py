"""A reward computed by a remote HTTP service (``--rm-type remote_rm --rm-url URL``).

The service receives ``{"prompt", "response", "label"}`` as JSON (slime's payload) and answers
with a JSON number or a JSON object (picked by ``--reward-key``). Connection failures, timeouts
and 5xx answers are retried with exponential backoff; a 4xx answer or a body that is not such
JSON is a configuration error and fails at once with a one-line message.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import weakref
from typing import Any

import aiohttp

from vime.rollout.rm_hub.reward_config import RewardConfig

from .checks import RewardInputError

logger = logging.getLogger(__name__)

_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aiohttp.ClientSession] = (
    weakref.WeakKeyDictionary()
)


class RemoteRewardError(RuntimeError):
    """The remote reward service could not be reached or kept failing; the message is one line."""


def _session(timeout_s: float) -> aiohttp.ClientSession:
    """One pooled session per event loop (a session cannot cross loops)."""
    loop = asyncio.get_running_loop()
    session = _sessions.get(loop)
    if session is None or session.closed:
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=64),
            timeout=aiohttp.ClientTimeout(total=timeout_s),
        )
        _sessions[loop] = session
    return session


async def close_remote_sessions() -> None:
    """Close this event loop's pooled session (call once when rollouts are over)."""
    session = _sessions.pop(asyncio.get_running_loop(), None)
    if session is not None and not session.closed:
        await session.close()


def _payload(sample: Any) -> dict[str, Any]:
    return {"prompt": sample.prompt, "response": sample.response, "label": sample.label}


def _parse_reward(body: str, url: str, sample: Any) -> Any:
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        raise RewardInputError(
            f"remote RM {url} answered sample {sample.index} with non-JSON {body[:80]!r}: "
            f"the service must answer a JSON number or object"
        ) from None
    if isinstance(value, bool) or not isinstance(value, int | float | dict):
        raise RewardInputError(
            f"remote RM {url} answered sample {sample.index} with JSON {type(value).__name__} {body[:80]!r}: "
            f"the service must answer a JSON number or object"
        )
    return value


async def remote_rm(args: Any, sample: Any, max_retries: int | None = None) -> Any:
    """POST the sample to ``args.rm_url`` and return the reward it answers."""
    cfg = RewardConfig.from_args(args)
    url = cfg.rm_url
    if not url:
        raise RewardInputError(
            "rm_type 'remote_rm' needs a service address: pass --rm-url http://HOST:PORT/PATH"
        )
    attempts = max_retries if max_retries is not None else cfg.rm_max_retries
    backoff_s = cfg.rm_retry_backoff_s
    session = _session(cfg.rm_timeout_s)
    last_error = ""
    for attempt in range(1, max(1, attempts) + 1):
        try:
            async with session.post(url, json=_payload(sample)) as response:
                body = await response.text()
                if 400 <= response.status < 500:
                    raise RewardInputError(
                        f"remote RM {url} rejected sample {sample.index} with HTTP {response.status} "
                        f"{body[:80]!r}: check --rm-url and the payload the service expects"
                    )
                if response.status >= 500:
                    raise aiohttp.ClientResponseError(
                        response.request_info, (), status=response.status, message=body[:80]
                    )
                return _parse_reward(body, url, sample)
        except (TimeoutError, aiohttp.ClientError) as exc:
            last_error = f"{type(exc).__name__}: {exc}".splitlines()[0]
            if attempt >= attempts:
                break
            delay = min(backoff_s * 2 ** (attempt - 1), 30.0) * (1 + random.random() / 4)
            logger.info("remote RM %s: %s; retry %d/%d in %.1fs", url, last_error, attempt, attempts, delay)
            await asyncio.sleep(delay)
    raise RemoteRewardError(
        f"remote RM {url} failed for sample {sample.index} after {attempts} attempts ({last_error}): "
        f"check that the service is up, or raise --rm-max-retries"
    )
