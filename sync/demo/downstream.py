"""The embedded demo's downstream: vime's own edits on top of translate(upstream at the cutoff).

Paths are given as UPSTREAM paths and mapped with the rule tables, so the demo keeps working
when a path rule changes. Each edit is chosen to exercise one merge outcome in the window.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LineEdit:
    """Replace ``old`` (exact text) with ``new`` in the downstream file mapped from ``upstream_path``."""

    upstream_path: str
    old: str
    new: str


EDITS: list[LineEdit] = [
    # vime starts `vllm serve` as a subprocess where slime launches SGLang in-process (the
    # translator reports that import as `unsupported`; vime's own code replaces it).
    LineEdit(
        "slime/backends/sglang_utils/sglang_engine.py",
        "    from sglang.srt.entrypoints.http_server import launch_server\n\n"
        "    import multiprocessing\n\n"
        "    process = multiprocessing.Process(target=launch_server, args=(server_args,))\n"
        "    process.start()\n"
        "    return process\n",
        "    import subprocess\n"
        "    import sys\n\n"
        '    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", server_args.model]\n'
        "    return subprocess.Popen(command)\n",
    ),
    # Overlaps #113 (same line): a real conflict for the review queue.
    LineEdit(
        "slime/utils/arguments.py",
        '"--rollout-temperature", type=float, default=1.0',
        '"--rollout-temperature", type=float, default=0.7',
    ),
    # A new function right where #111 rewrites `post`: a line conflict in different top-level
    # definitions, which the structure-aware pass settles.
    LineEdit(
        "slime/utils/http_utils.py",
        "async def post(url: str, payload: dict) -> dict:\n",
        "async def put(url: str, payload: dict) -> dict:\n"
        "    async with aiohttp.ClientSession() as session:\n"
        "        async with session.put(url, json=payload) as response:\n"
        "            response.raise_for_status()\n"
        "            return await response.json()\n"
        "\n\n"
        "async def post(url: str, payload: dict) -> dict:\n",
    ),
    # A downstream edit in a file that #112 renames: the edit must follow the rename.
    LineEdit(
        "slime/backends/sglang_utils/config.py",
        '        "chunked_prefill_size": None,\n',
        '        "chunked_prefill_size": None,\n        "enforce_eager": True,  # vime: CPU engines need eager mode\n',
    ),
    # Not overlapping #115 (which edits the middle of generate): must survive untouched.
    LineEdit(
        "slime/rollout/sglang_rollout.py",
        "def default_sampling_params(args) -> dict:\n",
        "# vime: request ids are prefixed by the server; keep ours short.\n"
        "REQUEST_ID_PREFIX = 'vime'\n\n\n"
        "def default_sampling_params(args) -> dict:\n",
    ),
]

# Downstream files deleted after the import (upstream #118 then modifies one: modify/delete).
DELETES: list[str] = ["docs/en/sglang-config.md"]

# The Dockerfile's first line is vime's own base image (upstream #122 changes the same line).
DOCKER_FROM = "FROM vllm/vllm-openai:v0.32.0"

# Files only vime has, by downstream path. `vime/utils/timer.py` collides with upstream #120's
# new `slime/utils/timer.py` (add/add).
OWN_FILES: dict[str, str] = {
    "vime/utils/timer.py": (
        '"""vime\'s step timer (monotonic, in milliseconds)."""\n\nimport time\n\n\n'
        "def now_ms() -> int:\n    return time.monotonic_ns() // 1_000_000\n"
    ),
    "vime/backends/vllm_utils/worker_extension.py": (
        '"""Loaded into vLLM workers with --worker-extension-cls: reloads weights from disk."""\n\n\n'
        "class WeightReloadExtension:\n"
        "    def reload_from(self, path: str) -> None:\n"
        "        self.model_runner.model.load_weights(path)\n"
    ),
    # What the gate checks on a sync branch: the reward contract against the demo's plugin,
    # which upstream #116 breaks (it starts returning a dict).
    ".vime-sync/gate.toml": (
        "# Contracts `vime-sync gate` runs on a sync branch (format: docs/customization.md).\n"
        "[[contract]]\n"
        'file = "tests/contract/test_reward_contract.py"\n'
        'args = ["--custom-rm-path", "vime_plugins.rollout.math_reward.reward_func"]\n'
    ),
}
