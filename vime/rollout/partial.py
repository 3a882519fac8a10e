"""Ending a rollout early: abort what is still generating and, for partial rollout, keep it for later.

Once a batch is full the rollout aborts every request still in flight on every engine (the router
would forward an abort to one engine only, so each engine is asked directly, until none is busy),
then waits for the aborted tasks. With ``--partial-rollout`` the groups they belonged to, holding
whatever tokens they got, are returned so the data source can hand them out again; their samples
remember the rollout they started in (``metadata["start_rollout_id"]``).
"""

from __future__ import annotations

import asyncio
import logging
from argparse import Namespace
from typing import Any

from vime.rollout.generate import router_url
from vime.utils.http_utils import CONNECTION_ERRORS, HTTPStatusError, get, post
from vime.utils.types import Sample

logger = logging.getLogger(__name__)


async def engine_urls(args: Namespace) -> list[str]:
    """The engines behind the router, as it lists them (``GET /workers``)."""
    answer = await get(router_url(args, "/workers"), timeout=30)
    return [worker["url"] for worker in answer.get("workers", [])]


async def abort_engines_until_idle(urls: list[str], timeout_s: float = 60.0) -> None:
    """``POST /abort_requests {}`` to each engine, repeated until its running + waiting count is 0."""

    async def idle(url: str) -> bool:
        text = await get(f"{url}/metrics", timeout=10)
        busy = 0.0
        for line in str(text).splitlines():
            if line.startswith(("vllm:num_requests_running", "vllm:num_requests_waiting")):
                busy += float(line.rsplit(" ", 1)[1])
        return busy == 0

    async def drain(url: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            try:
                await post(f"{url}/abort_requests", {}, timeout=30)
                if await idle(url):
                    return
            except (HTTPStatusError, *CONNECTION_ERRORS) as exc:  # a dead engine has nothing left to abort
                logger.warning("abort on %s failed: %s", url, exc)
                return
            if loop.time() > deadline:
                logger.warning("engine %s still busy %.0fs after abort", url, timeout_s)
                return
            await asyncio.sleep(0.2)

    await asyncio.gather(*(drain(url) for url in urls))


async def abort_in_flight(args: Namespace, state: Any, rollout_id: int) -> list[list[Sample]]:
    """Abort the rollout's remaining requests; return the partial groups when ``--partial-rollout``."""
    state.aborted = True
    if state.pendings:
        await abort_engines_until_idle(await engine_urls(args))
    partial: list[list[Sample]] = []
    while state.pendings:
        done, state.pendings = await asyncio.wait(state.pendings, return_when=asyncio.FIRST_COMPLETED)
        if not getattr(args, "partial_rollout", False):
            continue
        for task in done:
            group = task.result()
            for sample in group:
                if (
                    isinstance(sample, Sample)
                    and sample.response
                    and "start_rollout_id" not in sample.metadata
                ):
                    sample.metadata["start_rollout_id"] = rollout_id
            partial.append(group)
    if partial:
        logger.info("kept %d partial groups for the next rollout", len(partial))
    return partial
