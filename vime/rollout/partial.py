"""Ending a rollout early: abort what is still generating and, for partial rollout, keep it for later.

Once a batch is full the rollout aborts every request still in flight on every engine (the router
would forward an abort to one engine only, so each engine is asked directly), repeating until every
request of the rollout has come back: "idle" is judged by our own requests, not by the engines'
Prometheus gauges, which are only refreshed while an engine is stepping. With ``--partial-rollout`` the groups they belonged to, holding
whatever tokens they got, are returned so the data source can hand them out again; their samples
remember the rollout they started in (``metadata["start_rollout_id"]``).
"""

from __future__ import annotations

import asyncio
import logging
from argparse import Namespace
from typing import Any

from vime.rollout.generate import router_url
from vime.rollout.rollout_config import RolloutConfig
from vime.utils.http_utils import CONNECTION_ERRORS, HTTPStatusError, get, post
from vime.utils.types import Sample

logger = logging.getLogger(__name__)

_REABORT_S = 0.5


async def engine_urls(args: Namespace) -> list[str]:
    """The engines behind the router, as it lists them (``GET /workers``)."""
    answer = await get(router_url(args, "/workers"), timeout=30)
    return [worker["url"] for worker in answer.get("workers", [])]


async def abort_all(urls: list[str]) -> None:
    """``POST /abort_requests {}`` (abort everything) to each engine; a dead engine is skipped."""

    async def one(url: str) -> None:
        try:
            await post(f"{url}/abort_requests", {}, timeout=30)
        except (HTTPStatusError, *CONNECTION_ERRORS) as exc:  # a dead engine has nothing left to abort
            logger.warning("abort on %s failed: %s", url, exc)

    await asyncio.gather(*(one(url) for url in urls))


async def abort_in_flight(args: Namespace, state: Any, rollout_id: int) -> list[list[Sample]]:
    """Abort the rollout's remaining requests; return the partial groups when ``--partial-rollout``."""
    state.aborted = True
    keep_partial = RolloutConfig.from_args(args).partial_rollout
    urls = await engine_urls(args) if state.pendings else []
    partial: list[list[Sample]] = []
    while state.pendings:
        # Abort again until every request of ours has come back: one that was still on its way to
        # its engine (directly or through the router) when the first abort landed would otherwise
        # run to the end.
        await abort_all(urls)
        done, state.pendings = await asyncio.wait(state.pendings, timeout=_REABORT_S)
        if not keep_partial:
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
