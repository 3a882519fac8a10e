"""A generate hook the fully-async tests load by dotted path (it runs in the RolloutManager's process)."""

from __future__ import annotations

import asyncio
import time

from vime.rollout.generate import generate
from vime.rollout.partial import engine_urls
from vime.utils.http_utils import get

HOLD_UNTIL_VERSION = 3
_held: dict[str, bool] = {}


async def late_first_sample(args, sample, sampling_params):
    """vime's generate; the first sample of the run then waits, its tokens written, until the engines
    serve version 3: its group finishes two versions after its tokens were (a stale group)."""
    sample = await generate(args, sample, sampling_params)
    if _held.setdefault("done", False):
        return sample
    _held["done"] = True
    [url, *_] = await engine_urls(args)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        version = (await get(f"{url}/weight_info")).get("weight_version")
        if str(version).isdigit() and int(version) >= HOLD_UNTIL_VERSION:
            break
        await asyncio.sleep(0.1)
    return sample


# ----- a stand-in engine for the producer's unit tests (no vLLM) ---------------------------------
FAKE_ENGINE: dict = {"version": "1", "hold_first": None, "calls": 0}


async def fake_engine_generate(args, sample, sampling_params):
    """Answers ``\\boxed{2}`` (3 tokens) tagged with ``FAKE_ENGINE["version"]``; with
    ``FAKE_ENGINE["hold_first"]`` (a threading.Event) the run's first sample, its tokens written,
    waits for the event before it returns."""
    FAKE_ENGINE["calls"] += 1
    first = FAKE_ENGINE["calls"] == 1
    if not sample.tokens:
        sample.tokens = [1, 2]
    meta = {
        "weight_versions": [{"version": FAKE_ENGINE["version"], "start": 0, "end": 3}],
        "finish_reason": "stop",
    }
    sample.append_response_tokens([5, 6, 7], [-0.1, -0.2, -0.3], meta_info=meta, text="\\boxed{2}")
    hold = FAKE_ENGINE["hold_first"]
    if first and hold is not None:
        await asyncio.to_thread(hold.wait, 60)
    return sample
