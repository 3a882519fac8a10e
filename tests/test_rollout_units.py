"""Rollout pieces that need no vLLM engine: sampling params, answer parsing, retries, debug data, ports, guard."""

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from argparse import Namespace

import pytest
from aiohttp import web

from vime.backends.vllm_utils.engine_client import server_request_id
from vime.rollout.debug_data import load_rollout_data, save_rollout_data
from vime.rollout.generate import apply_generate_output, post_generate
from vime.rollout.sampling_params import build_sampling_params
from vime.utils.http_utils import HTTPStatusError, allocate_ports, is_port_free, run
from vime.utils.types import Sample


def _args(**kw):
    base = dict(
        rollout_temperature=1.0, rollout_top_p=0.9, rollout_top_k=-1, rollout_max_response_len=32,
        rollout_stop=None, rollout_stop_token_ids=[2], rollout_skip_special_tokens=False,
    )  # fmt: skip
    return Namespace(**(base | kw))


def test_sampling_params_map_slime_names_to_vllm():
    params = build_sampling_params(_args(), temperature=0.0, max_tokens=0)
    assert params["temperature"] == 0.0 and params["max_tokens"] == 0  # explicit zeros stay zeros
    assert params["top_p"] == 0.9 and params["stop_token_ids"] == [2]
    assert params["include_stop_str_in_output"] is True and params["logprobs"] == 0
    assert "stop" not in params


class _Tok:
    def decode(self, ids, skip_special_tokens=False):
        return "".join(chr(ord("a") + i % 26) for i in ids)


def test_generate_answer_fills_tokens_logprobs_versions_and_status():
    sample = Sample(tokens=[5, 6])
    choice = {
        "token_ids": [1, 2, 3],
        "finish_reason": "length",
        "logprobs": {"content": [{"logprob": -0.5}, {"logprob": -1.0}, {"logprob": -2.0}]},
        "weight_versions": [{"version": "3", "start": 0, "end": 3}],
    }
    apply_generate_output(sample, choice, _Tok())
    assert sample.tokens == [5, 6, 1, 2, 3] and sample.response_length == 3
    assert sample.rollout_log_probs == [-0.5, -1.0, -2.0] and sample.response == "bcd"
    assert sample.status == Sample.Status.TRUNCATED and sample.weight_versions == ["3"]
    aborted = apply_generate_output(Sample(tokens=[1]), {"token_ids": [], "finish_reason": "abort"}, _Tok())
    assert aborted.status == Sample.Status.ABORTED and aborted.response_length == 0
    with pytest.raises(RuntimeError, match="log probabilities"):
        apply_generate_output(
            Sample(), {"token_ids": [1, 2], "logprobs": {"content": [{"logprob": 0.0}]}}, _Tok()
        )


def test_abort_ids_get_the_servers_prefix_once():
    assert server_request_id("abc") == "generate-tokens-abc"
    assert server_request_id("generate-tokens-abc") == "generate-tokens-abc"


async def _flaky_server(failures: int, status: int):
    """A local HTTP stand-in for an engine that fails ``failures`` times, then answers (no vLLM needed)."""
    calls = []

    async def handler(request):
        calls.append(await request.json())
        if len(calls) <= failures:
            return web.Response(status=status, text="engine gone")
        return web.json_response({"choices": [{"token_ids": [1]}]})

    app = web.Application()
    app.router.add_post("/inference/v1/generate", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    port = allocate_ports(1, start=41000)[0]
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, f"http://127.0.0.1:{port}/inference/v1/generate", calls


def test_lost_requests_are_retried_until_an_engine_answers():
    async def scenario():
        runner, url, calls = await _flaky_server(2, 503)
        try:
            answer = await post_generate(url, {"request_id": "x"}, retry_timeout_s=30)
        finally:
            await runner.cleanup()
        return answer, calls

    answer, calls = run(scenario())
    assert answer == {"choices": [{"token_ids": [1]}]} and len(calls) == 3
    assert len({c["request_id"] for c in calls}) == 3  # a retried request gets a fresh id


def test_bad_requests_are_not_retried_and_aborts_stop_retrying():
    async def bad_request():
        runner, url, calls = await _flaky_server(5, 400)
        try:
            with pytest.raises(HTTPStatusError):
                await post_generate(url, {}, retry_timeout_s=30)
        finally:
            await runner.cleanup()
        return calls

    assert len(run(bad_request())) == 1

    async def aborted():
        port = allocate_ports(1, start=42000)[0]  # nothing listens: connection refused
        return await post_generate(
            f"http://127.0.0.1:{port}/x", {}, retry_timeout_s=30, is_aborted=lambda: True
        )

    assert run(aborted()) is None


def test_retry_gives_up_with_a_clear_error():
    port = allocate_ports(1, start=43000)[0]
    with pytest.raises(RuntimeError, match="rollout-request-retry-timeout"):
        run(post_generate(f"http://127.0.0.1:{port}/x", {}, retry_timeout_s=0.5))


def test_debug_rollout_data_round_trip(tmp_path):
    template = str(tmp_path / "rollout_{rollout_id}.pkl")
    data = {"tokens": [[1, 2]], "rewards": [1.0]}
    path = save_rollout_data(template, 3, data)
    assert path.name == "rollout_3.pkl" and load_rollout_data(template, 3) == data
    with pytest.raises(FileNotFoundError, match="rollout 4"):
        load_rollout_data(template, 4)
    with pytest.raises(ValueError, match="rollout_id"):
        save_rollout_data(str(tmp_path / "fixed.pkl"), 0, data)


def test_allocated_ports_are_distinct_and_free():
    first = allocate_ports(3, start=44000)
    second = allocate_ports(3, start=44000)
    assert len(set(first + second)) == 6 and all(is_port_free(p) for p in first + second)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def _wait_dead(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


def test_guarded_server_dies_when_its_owner_is_sigkilled(tmp_path):
    """A stand-in server (``sleep``) under the real guard: SIGKILL the owner, the server must go too."""
    owner_code = textwrap.dedent(f"""
        import sys, time
        from vime.backends.vllm_utils.server_process import ServerProcess
        p = ServerProcess(["sleep", "600"], {str(tmp_path / "s.log")!r})
        p.start()
        while p.server_pid is None:
            time.sleep(0.05)
        print(p.server_pid, flush=True)
        time.sleep(600)
    """)
    owner = subprocess.Popen([sys.executable, "-c", owner_code], stdout=subprocess.PIPE, text=True)
    server_pid = int(owner.stdout.readline())
    assert _alive(server_pid)
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    assert _wait_dead(server_pid), "server outlived its owner"


def test_server_process_stop_kills_the_whole_group(tmp_path):
    from vime.backends.vllm_utils.server_process import ServerProcess

    # the "server" forks a grandchild, as vLLM's API server forks its engine core
    p = ServerProcess(
        [sys.executable, "-c", "import subprocess,time; subprocess.Popen(['sleep','600']); time.sleep(600)"],
        tmp_path / "s.log",
    )
    p.start()
    while p.server_pid is None:
        time.sleep(0.05)
    time.sleep(0.5)
    children = [
        int(x)
        for x in subprocess.run(
            ["pgrep", "-g", str(p.server_pid)], capture_output=True, text=True
        ).stdout.split()
    ]
    assert len(children) >= 2
    p.stop()
    assert all(_wait_dead(pid) for pid in children) and not p.alive()


def test_engine_start_failure_shows_the_end_of_the_log(tmp_path):
    from vime.backends.vllm_utils.server_process import EngineStartError, ServerProcess

    p = ServerProcess(
        [sys.executable, "-c", "print('boom: bad model path'); raise SystemExit(3)"], tmp_path / "s.log"
    )
    p.start()
    with pytest.raises(
        EngineStartError, match="(?s)exited before.*boom: bad model path.*server exited with code 3"
    ):
        p.wait_healthy("http://127.0.0.1:1", timeout_s=30)


def test_ray_actor_kill_takes_its_server_along(ray_session, tmp_path):
    """Real Ray: an actor owning a guarded stand-in server is killed; the server must die with it."""
    import ray

    @ray.remote(num_cpus=0)
    class Owner:
        def start(self, log):
            from vime.backends.vllm_utils.server_process import ServerProcess

            self.p = ServerProcess(["sleep", "600"], log)
            self.p.start()
            while self.p.server_pid is None:
                time.sleep(0.05)
            return self.p.server_pid, os.getpid()

    owner = Owner.remote()
    server_pid, actor_pid = ray.get(owner.start.remote(str(tmp_path / "s.log")))
    assert _alive(server_pid) and server_pid != actor_pid
    ray.kill(owner)
    assert _wait_dead(server_pid), "server outlived its Ray actor"


def test_background_loop_runs_coroutines_from_sync_code():
    assert run(asyncio.sleep(0, result=7)) == 7


def test_prompt_ids_for_text_chat_and_continued_samples(tiny_model_dir):
    from transformers import AutoTokenizer

    from vime.rollout.generate import prompt_token_ids

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    chat = [{"role": "user", "content": "What is 3+4?"}]
    ids = prompt_token_ids(Sample(prompt=chat), tok)
    assert isinstance(ids, list) and all(isinstance(i, int) for i in ids)
    assert tok.decode(ids) == "<|im_start|>user\nWhat is 3+4?<|im_end|>\n<|im_start|>assistant\n"
    assert prompt_token_ids(Sample(prompt="3+4="), tok) == tok.encode("3+4=", add_special_tokens=False)
    assert prompt_token_ids(Sample(prompt="ignored", tokens=[7, 8, 9]), tok) == [7, 8, 9]


def test_groups_finishing_together_fill_the_batch_in_prompt_order(make_rollout_args, monkeypatch):
    """Six groups that all come back in the same wait: the batch takes the first two prompts, and
    with --partial-rollout the other four go back to the buffer (no engine: the generate step is faked)."""
    from vime.rollout import vllm_rollout
    from vime.rollout.data_source import make_data_source

    released = asyncio.Event()

    async def finish_together(args, group, sampling_params, evaluation=False):
        await released.wait()
        for sample in group:
            sample.status, sample.reward = Sample.Status.TRUNCATED, 0.0
        return group

    async def release_soon():
        await asyncio.sleep(0.05)
        released.set()

    monkeypatch.setattr(vllm_rollout, "generate_and_rm_group", finish_together)
    args = make_rollout_args("--over-sampling-batch-size", "6", "--partial-rollout")
    data_source = make_data_source(args)

    async def rollout():
        releaser = asyncio.ensure_future(release_soon())
        result = await vllm_rollout.generate_rollout_async(args, 0, data_source.get_samples)
        await releaser
        return result

    output, partial = run(rollout())
    assert [[s.group_index for s in group] for group in output.samples] == [[0, 0], [1, 1]]
    assert sorted(group[0].group_index for group in partial) == [2, 3, 4, 5]


def test_the_engine_answers_once_and_detokenizes_only_when_stop_strings_need_the_text():
    from vllm.sampling_params import RequestOutputKind

    from vime.rollout.generate import engine_request_params

    plain = build_sampling_params(_args())
    sent = engine_request_params(plain)
    assert sent["detokenize"] is False and "detokenize" not in plain  # a copy, not the caller's
    assert sent["output_kind"] == RequestOutputKind.FINAL_ONLY.value  # the installed vLLM's own enum
    with_stop = {**plain, "stop": ["</answer>"]}
    assert "detokenize" not in engine_request_params(with_stop)  # vLLM refuses stop strings without the text
