"""The remote reward: a real aiohttp server on 127.0.0.1, started in each test's event loop."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from aiohttp import web

from tests.net_helpers import free_port
from vime.rollout.rm_hub import RemoteRewardError, RewardInputError, async_rm, close_remote_sessions
from vime.utils.types import Sample


def make_args(url: str | None, **overrides) -> SimpleNamespace:
    values = {
        "rm_type": "remote_rm",
        "rm_url": url,
        "custom_rm_path": None,
        "reward_key": None,
        "rm_max_retries": 3,
        "rm_retry_backoff_s": 0.01,
        "rm_timeout_s": 5.0,
    }
    values.update(overrides)
    return SimpleNamespace(**values)


class RewardServer:
    """A reward service whose routes answer well, flakily or wrongly; it records what it got."""

    def __init__(self) -> None:
        self.payloads: list[dict] = []
        self.flaky_calls = 0

    async def score(self, request: web.Request) -> web.Response:
        payload = await request.json()
        self.payloads.append(payload)
        return web.json_response(1.0 if payload["response"].strip() == payload["label"] else 0.0)

    async def score_dict(self, request: web.Request) -> web.Response:
        return web.json_response({"score": 0.5, "detail": "partial"})

    async def flaky(self, request: web.Request) -> web.Response:
        self.flaky_calls += 1
        if self.flaky_calls < 3:
            return web.Response(status=503, text="warming up")
        return web.json_response(0.75)

    async def html(self, request: web.Request) -> web.Response:
        return web.Response(text="<html>oops</html>", content_type="text/html")

    async def json_string(self, request: web.Request) -> web.Response:
        return web.json_response("great")

    async def app_runner(self) -> tuple[web.AppRunner, str]:
        app = web.Application()
        app.router.add_post("/score", self.score)
        app.router.add_post("/dict", self.score_dict)
        app.router.add_post("/flaky", self.flaky)
        app.router.add_post("/html", self.html)
        app.router.add_post("/string", self.json_string)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        return runner, f"http://127.0.0.1:{port}"


def with_server(test_body):
    """Run ``test_body(server, base_url)`` with the server up, then close server and session."""

    async def main():
        server = RewardServer()
        runner, base = await server.app_runner()
        try:
            return await test_body(server, base)
        finally:
            await close_remote_sessions()
            await runner.cleanup()

    return asyncio.run(main())


def test_remote_reward_sends_prompt_response_label() -> None:
    async def body(server, base):
        samples = [Sample(index=i, prompt="2+2?", response=r, label="4") for i, r in enumerate(["4", "5"])]
        rewards = [await async_rm(make_args(f"{base}/score"), s) for s in samples]
        return rewards, server.payloads

    rewards, payloads = with_server(body)
    assert rewards == [1.0, 0.0]
    assert payloads[0] == {"prompt": "2+2?", "response": "4", "label": "4"}


def test_concurrent_requests_share_one_session() -> None:
    async def body(server, base):
        samples = [Sample(index=i, prompt="p", response=str(i % 2), label="1") for i in range(20)]
        return await asyncio.gather(*(async_rm(make_args(f"{base}/score"), s) for s in samples))

    assert with_server(body) == [float(i % 2) for i in range(20)]


def test_dict_answer_read_through_reward_key() -> None:
    async def body(server, base):
        return await async_rm(make_args(f"{base}/dict", reward_key="score"), Sample(index=0, response="x"))

    assert with_server(body) == {"score": 0.5, "detail": "partial"}


def test_5xx_is_retried_until_it_succeeds() -> None:
    async def body(server, base):
        reward = await async_rm(make_args(f"{base}/flaky"), Sample(index=0, response="x"))
        return reward, server.flaky_calls

    assert with_server(body) == (0.75, 3)


def test_retries_exhausted_is_one_line_error() -> None:
    async def body(server, base):
        args = make_args(f"{base}/flaky", rm_max_retries=2)
        with pytest.raises(RemoteRewardError, match=r"failed for sample 7 after 2 attempts .*503") as info:
            await async_rm(args, Sample(index=7, response="x"))
        assert "\n" not in str(info.value)
        return server.flaky_calls

    assert with_server(body) == 2


@pytest.mark.parametrize(
    ("route", "message"),
    [
        (
            "html",
            r"answered sample 0 with non-JSON '<html>oops</html>': the service must answer a JSON number",
        ),
        ("string", r"answered sample 0 with JSON str '\"great\"'"),
        ("missing", r"rejected sample 0 with HTTP 404 .*check --rm-url"),
    ],
)
def test_malformed_answers_fail_at_once(route: str, message: str) -> None:
    async def body(server, base):
        with pytest.raises(RewardInputError, match=message):
            await async_rm(
                make_args(f"{base}/{route}", rm_max_retries=5, rm_retry_backoff_s=10.0), Sample(index=0)
            )

    with_server(body)  # a 10 s backoff would time the test out if these were retried


def test_unreachable_service() -> None:
    port = free_port("127.0.0.1")  # free a moment ago: nothing listens there

    async def body():
        try:
            await async_rm(make_args(f"http://127.0.0.1:{port}/score", rm_max_retries=2), Sample(index=1))
        finally:
            await close_remote_sessions()

    with pytest.raises(RemoteRewardError, match=r"after 2 attempts \(ClientConnectorError"):
        asyncio.run(body())


def test_missing_url() -> None:
    with pytest.raises(RewardInputError, match=r"pass --rm-url"):
        asyncio.run(async_rm(make_args(None), Sample(index=0)))
