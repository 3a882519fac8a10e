"""The engine picker of ``--rollout-routing direct`` as pure functions and one object (no server).

The worker list is a plain function handed to the picker, and time is a counter the test moves:
what is checked is the picking and refreshing logic itself, which needs neither a router nor an
engine. The same picker against the real router and engine is in test_rollout_direct_routing.py.
"""

from __future__ import annotations

from collections import Counter

import pytest

from vime.rollout.engine_routing import (
    EnginePicker,
    NoEngineError,
    bounded_affinity_pick,
    least_in_flight,
    listed_engines,
    prompt_affinity,
    rendezvous_pick,
)
from vime.utils.http_utils import run

ENGINES = [f"http://127.0.0.1:{15000 + i}" for i in range(4)]
KEYS = [f"session-{i}" for i in range(400)]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _picker(lists: list, clock: Clock | None = None, **kwargs) -> tuple[EnginePicker, list[int]]:
    """A picker whose worker list is ``lists[-1]`` (a test may append a new list); counts fetches."""
    calls = [0]

    async def fetch():
        calls[0] += 1
        answer = lists[-1]
        if isinstance(answer, Exception):
            raise answer
        return list(answer) if answer is not None else None

    return EnginePicker("http://router:1", fetch=fetch, clock=clock or Clock(), **kwargs), calls


def test_a_key_stays_on_its_engine_and_keys_spread():
    first = {key: rendezvous_pick(key, ENGINES) for key in KEYS}
    assert all(rendezvous_pick(key, list(reversed(ENGINES))) == first[key] for key in KEYS)
    spread = Counter(first.values())
    assert set(spread) == set(ENGINES) and min(spread.values()) > len(KEYS) / len(ENGINES) / 2


def test_removing_an_engine_moves_only_its_own_keys():
    before = {key: rendezvous_pick(key, ENGINES) for key in KEYS}
    removed = ENGINES[1]
    after = {key: rendezvous_pick(key, [u for u in ENGINES if u != removed]) for key in KEYS}
    moved = {key for key in KEYS if before[key] != after[key]}
    assert moved == {key for key in KEYS if before[key] == removed} and moved
    added = {key: rendezvous_pick(key, [*ENGINES, "http://127.0.0.1:16000"]) for key in KEYS}
    assert all(added[key] in (before[key], "http://127.0.0.1:16000") for key in KEYS)


def test_least_in_flight_takes_ties_in_turn():
    assert least_in_flight(ENGINES[:3], {ENGINES[0]: 2, ENGINES[1]: 1, ENGINES[2]: 1}, 0) == ENGINES[1]
    assert least_in_flight(ENGINES[:3], {ENGINES[0]: 2, ENGINES[1]: 1, ENGINES[2]: 1}, 1) == ENGINES[2]
    assert [least_in_flight(ENGINES[:3], {}, turn) for turn in range(3)] == ENGINES[:3]


def test_unkeyed_requests_balance_over_requests_in_flight():
    async def scenario():
        picker, _ = _picker([ENGINES[:3]])
        held = [await picker.acquire() for _ in range(6)]
        balanced = Counter(held)
        picker.release(ENGINES[1], failed=False)
        refill = await picker.acquire()
        keyed = {await picker.acquire("session-7") for _ in range(5)}
        return balanced, refill, keyed, dict(picker.in_flight)

    balanced, refill, keyed, in_flight = run(scenario())
    assert balanced == dict.fromkeys(ENGINES[:3], 2)
    assert refill == ENGINES[1]  # the only engine with one request fewer
    assert keyed == {rendezvous_pick("session-7", ENGINES[:3])}  # in-flight counts do not move a key
    assert sum(in_flight.values()) == 6 + 5


def test_a_failed_engine_is_skipped_until_it_answers_or_its_mark_expires():
    clock = Clock()

    async def scenario():
        picker, _ = _picker([ENGINES[:2]], clock)
        key = next(k for k in KEYS if rendezvous_pick(k, ENGINES[:2]) == ENGINES[0])
        dead = await picker.acquire(key)
        picker.release(dead, failed=True)
        while_marked = {await picker.acquire(key), await picker.acquire(), await picker.acquire()}
        clock.now += picker.failed_s
        after_expiry = await picker.acquire(key)
        picker.release(after_expiry, failed=True)
        picker.release(ENGINES[1], failed=True)
        all_marked = await picker.acquire(key)  # every engine failed lately: try them all again
        picker.release(all_marked, failed=False)
        cleared = dict(picker.failed)
        return dead, while_marked, after_expiry, all_marked, cleared

    dead, while_marked, after_expiry, all_marked, cleared = run(scenario())
    assert dead == ENGINES[0] and while_marked == {ENGINES[1]}
    assert after_expiry == ENGINES[0] and all_marked == ENGINES[0]
    assert list(cleared) == [ENGINES[1]]  # the answer cleared the mark of the engine that gave it


def test_the_list_is_read_rarely_and_again_soon_after_a_failure():
    clock = Clock()

    async def scenario():
        lists = [ENGINES[:2]]
        picker, calls = _picker(lists, clock)
        for _ in range(50):
            picker.release(await picker.acquire(), failed=False)
        fetched_once = calls[0]
        clock.now += picker.refresh_s
        await picker.acquire()
        fetched_when_old = calls[0]
        lists.append(ENGINES[1:3])  # the router removed engine 0 and added engine 2
        failed = await picker.acquire()
        picker.release(failed, failed=True)
        burst = [await picker.acquire() for _ in range(5)]  # right after the failure: old list
        clock.now += 1.0
        after = await picker.acquire()
        return fetched_once, fetched_when_old, calls[0], burst, after, list(picker.urls)

    fetched_once, fetched_when_old, fetched, burst, after, urls = run(scenario())
    assert (fetched_once, fetched_when_old, fetched) == (1, 2, 3)
    assert all(url in ENGINES[:2] for url in burst) and urls == ENGINES[1:3] and after in ENGINES[1:3]


def test_router_errors_keep_the_old_list_and_no_list_is_retryable():
    clock = Clock()

    async def scenario():
        lists = [ENGINES[:1]]
        picker, _ = _picker(lists, clock)
        first = await picker.acquire()
        lists.append(ConnectionRefusedError("router down"))
        clock.now += picker.refresh_s
        kept = await picker.acquire()
        empty, _ = _picker([ConnectionRefusedError("router down")], clock)
        with pytest.raises(NoEngineError):
            await empty.acquire()
        none_listed, fetches = _picker([[]], clock)
        for _ in range(3):
            with pytest.raises(ConnectionError):  # what post_generate retries
                await none_listed.acquire()
        assert fetches[0] == 1  # retries right after an empty list do not ask the router again
        clock.now += 1.0
        with pytest.raises(ConnectionError):
            await none_listed.acquire()
        assert fetches[0] == 2
        engine_itself, _ = _picker([None], clock)  # the address has no /workers: it is an engine
        return first, kept, await engine_itself.acquire()

    first, kept, itself = run(scenario())
    assert first == kept == ENGINES[0] and itself == "http://router:1"


def test_the_worker_list_keeps_healthy_engines_or_else_all_listed():
    def worker(port: int, healthy: bool) -> dict:
        return {"url": f"http://127.0.0.1:{port}/", "is_healthy": healthy, "load": 0}

    answer = {"workers": [worker(1, True), worker(2, False), worker(3, True)], "total": 3}
    assert listed_engines(answer) == ["http://127.0.0.1:1", "http://127.0.0.1:3"]
    assert listed_engines({"workers": [worker(2, False)]}) == ["http://127.0.0.1:2"]
    assert listed_engines({"workers": []}) == listed_engines("not json") == []


def test_a_prompts_samples_share_an_engine_within_a_bounded_load():
    assert prompt_affinity([1, 2, 3]) == prompt_affinity([1, 2, 3]) != prompt_affinity([1, 2, 33])
    quiet = {bounded_affinity_pick("prompt-a", ENGINES, {}) for _ in range(5)}
    assert quiet == {rendezvous_pick("prompt-a", ENGINES)}

    async def grpo_burst():  # 16 prompts x 8 samples submitted at once, nothing answered yet
        picker, _ = _picker([ENGINES])
        return [
            (prompt, await picker.acquire(affinity=f"prompt-{prompt}"))
            for prompt in range(16)
            for _ in range(8)
        ]

    picks = run(grpo_burst())
    load = Counter(url for _, url in picks)
    assert max(load.values()) - min(load.values()) <= 16  # no engine queues up
    engines_per_prompt = [len({url for p, url in picks if p == prompt}) for prompt in range(16)]
    assert sum(n == 1 for n in engines_per_prompt) >= 12  # most groups stay on one engine
    home = rendezvous_pick("prompt-a", ENGINES)
    busy = dict.fromkeys(ENGINES, 100) | {home: 124}
    assert bounded_affinity_pick("prompt-a", ENGINES, busy) == home  # 125 is 25 % over the least loaded
    assert bounded_affinity_pick("prompt-a", ENGINES, busy | {home: 125}) != home
    idle = dict.fromkeys(ENGINES, 0)
    assert bounded_affinity_pick("prompt-a", ENGINES, idle | {home: 15}) == home
    assert bounded_affinity_pick("prompt-a", ENGINES, idle | {home: 16}) != home


def test_idle_connections_are_dropped_before_vllm_closes_them():
    """Direct routing talks to vLLM's own server: a pooled connection must not outlive its keep-alive."""
    import vllm.envs

    from vime.utils import http_utils

    async def keepalive():
        return http_utils._session().connector._keepalive_timeout

    assert run(keepalive()) == http_utils.KEEPALIVE_S < vllm.envs.VLLM_HTTP_TIMEOUT_KEEP_ALIVE
