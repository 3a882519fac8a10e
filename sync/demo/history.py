"""The embedded demo's upstream history: slime-style pull requests, as edits on ``data/upstream``.

Each :class:`Commit` is one merged PR (or a direct push when ``pr`` is None). The window
#111..#122 is built to show every merge outcome vime-sync handles: clean merges, a line conflict,
a conflict the structure-aware pass settles, a rename that carries downstream edits, deletions,
modify/delete, add/add, binary and non-UTF-8 files, an unparseable upstream file, files not
mirrored, a PR numbered inside the window that merged later (#114), one numbered below it that
merged inside it (#109), a direct push, and a PR (#116) that breaks the reward-hook contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# A 1x1 PNG, then the same image with another colour: binary content for the demo.
PNG_V1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cf000000030101006f4c3a570000000049454e44ae426082"
)
PNG_V2 = PNG_V1.replace(bytes.fromhex("6360f8cf"), bytes.fromhex("63f8ffff"))

Write = tuple[str, bytes]  # (path, new content)


@dataclass
class Commit:
    """One upstream commit: what it writes, edits, renames and deletes."""

    subject: str
    author: str
    pr: int | None
    writes: dict[str, bytes | str] = field(default_factory=dict)
    edits: list[tuple[str, str, str]] = field(default_factory=list)  # (path, old, new) exact replacements
    renames: dict[str, str] = field(default_factory=dict)
    deletes: list[str] = field(default_factory=list)


CUTOFF_PR = 110
WINDOW = (111, 122)

BEFORE_CUTOFF: list[Commit] = [
    Commit("Add GRPO launch script for Qwen3-4B", "zhuzilin", 103, writes={"docs/logo.png": PNG_V1}),
    Commit(
        "Pass context length to the engines",
        "fzyzcjy",
        107,
        edits=[
            (
                "slime/backends/sglang_utils/config.py",
                '"context_length": args.sglang_context_length,',
                '"context_length": args.sglang_context_length,\n        "chunked_prefill_size": None,',
            )
        ],
    ),
    Commit(
        "Fix typo in quick start",
        "yitianlian",
        110,
        edits=[("docs/en/quick-start.md", "then run", "and then run")],
    ),
]

IN_WINDOW: list[Commit] = [
    Commit(
        "Fix stale doc link",
        "zhuzilin",
        109,  # numbered below the window, merged inside it
        edits=[("docs/en/quick-start.md", "Install slime", "Install slime (see docs/en/sglang-config.md)")],
    ),
    Commit(
        "http_utils: retry POST on connection errors",
        "fzyzcjy",
        111,
        edits=[
            (
                "slime/utils/http_utils.py",
                "async def post(url: str, payload: dict) -> dict:\n"
                "    async with aiohttp.ClientSession() as session:\n"
                "        async with session.post(url, json=payload) as response:\n"
                "            response.raise_for_status()\n"
                "            return await response.json()\n",
                "async def post(url: str, payload: dict, retries: int = 3) -> dict:\n"
                "    for attempt in range(retries):\n"
                "        try:\n"
                "            async with aiohttp.ClientSession() as session:\n"
                "                async with session.post(url, json=payload) as response:\n"
                "                    response.raise_for_status()\n"
                "                    return await response.json()\n"
                "        except aiohttp.ClientConnectionError:\n"
                "            if attempt == retries - 1:\n"
                "                raise\n",
            )
        ],
    ),
    Commit(
        "Rename engine config module to server_config",
        "zhuzilin",
        112,
        renames={"slime/backends/sglang_utils/config.py": "slime/backends/sglang_utils/server_config.py"},
    ),
    Commit(
        "Lower the default rollout temperature to 0.8",
        "Zhuohao-Li",
        113,
        edits=[
            (
                "slime/utils/arguments.py",
                '"--rollout-temperature", type=float, default=1.0',
                '"--rollout-temperature", type=float, default=0.8',
            )
        ],
    ),
    Commit(
        "Handle aborted requests in the default rollout",
        "yitianlian",
        115,
        edits=[
            (
                "slime/rollout/sglang_rollout.py",
                '        case "stop":\n            sample.status = sample.Status.COMPLETED\n',
                '        case "stop":\n            sample.status = sample.Status.COMPLETED\n'
                '        case "abort":\n            sample.status = sample.Status.ABORTED\n',
            ),
            (
                "slime/backends/sglang_utils/sglang_engine.py",
                "    def shutdown(self):",
                "    def abort_all(self):\n"
                '        return self._make_request("abort_request", {"abort_all": True})\n\n'
                "    def shutdown(self):",
            ),
        ],
    ),
    Commit(
        "math_reward: return a dict with score and details",
        "lilei",
        116,  # breaks the reward contract: a reward must be a number
        edits=[
            ("slime_plugins/rollout/math_reward.py", "-> float:", "-> dict:"),
            (
                "slime_plugins/rollout/math_reward.py",
                "        return 0.0\n",
                '        return {"score": 0.0}\n',
            ),
            (
                "slime_plugins/rollout/math_reward.py",
                "    return 1.0 if match.group(1).strip() == str(label).strip() else 0.0",
                '    return {"score": 1.0 if match.group(1).strip() == str(label).strip() else 0.0}',
            ),
        ],
    ),
    Commit("Remove the deprecated 0.1 launch script", "zhuzilin", 117, deletes=["scripts/run-old.sh"]),
    Commit(
        "docs: explain router options",
        "Zhuohao-Li",
        118,
        edits=[
            (
                "docs/en/sglang-config.md",
                "SGLang's router spreads requests across engines.",
                "SGLang's router spreads requests across engines; `--sglang-router-policy` picks how.",
            )
        ],
    ),
    Commit("New logo", "lilei", 119, writes={"docs/logo.png": PNG_V2}),
    Commit(
        "Update README badges",
        "zhuzilin",
        None,  # a direct push, no PR
        edits=[("README.md", "# slime (demo)\n", "# slime (demo)\n\n![ci](badge.svg)\n")],
    ),
    Commit(
        "Add a step timer and a countdown example",
        "fzyzcjy",
        120,
        writes={
            "slime/utils/timer.py": (
                '"""Wall-clock timers for rollout and training steps."""\n\nimport time\n\n\n'
                "class Timer:\n    def __init__(self):\n        self.start = time.perf_counter()\n\n"
                "    def elapsed(self) -> float:\n        return time.perf_counter() - self.start\n"
            ),
            "examples/countdown/run.sh": (
                "#!/bin/bash\n# Countdown with SGLang engines.\n"
                "python train.py --sglang-mem-fraction-static 0.6 --sglang-context-length 4096\n"
            ),
            "docs/zh/notes.txt": "Notes: caf\xe9 na\xefve r\xe9sum\xe9 (Latin-1)\n".encode("latin-1"),
        },
    ),
    Commit(
        "WIP: python2-style debug helper",
        "contributor",
        121,
        writes={"slime/utils/debug_dump.py": 'def dump(x):\n    print "sglang state:", x\n'},
    ),
    Commit(
        "Docker: move to SGLang v0.5.10 and refresh the patch",
        "yitianlian",
        122,
        edits=[
            ("docker/Dockerfile", "lmsysorg/sglang:v0.5.9", "lmsysorg/sglang:v0.5.10"),
            ("docker/patch/sglang.patch", "+DEFAULT = 2", "+DEFAULT = 3"),
            (".github/workflows/ci.yml", "pytest", "pytest -x"),
        ],
    ),
]

AFTER_WINDOW: list[Commit] = [
    Commit(
        "Raise the default response length",
        "Zhuohao-Li",
        114,  # numbered inside the window, merged after it
        edits=[
            (
                "slime/utils/arguments.py",
                '"--rollout-max-response-len", type=int, default=1024',
                '"--rollout-max-response-len", type=int, default=2048',
            )
        ],
    ),
]
