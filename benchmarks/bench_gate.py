"""How long the gate takes, and what isolating each contract in its own subprocess costs.

Reference: every contract file run in ONE plain pytest process (what a developer runs locally).
Measured against it in the same run: the gate's default contract step (all files in one
subprocess through tools/run_contract.py, PYTHONPATH=<worktree>), the same files with one
subprocess per file (the isolation a gate.toml entry gets), and the gate on the embedded demo's
sync branch (static checks + the demo's reward contract). Prints medians of --repeats runs.

    .venv/bin/python benchmarks/bench_gate.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]


def one_process_contracts() -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/contract",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:hypothesispytest",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"contract suite failed:\n{done.stdout[-2000:]}")
    return time.perf_counter() - started


def gate_contract_step(per_file: bool) -> float:
    from sync.gate import run_contracts
    from sync.gate.config import ContractRun, GateConfig
    from sync.gate.contracts import default_runs
    from sync.model.gate import GateResult

    runs = default_runs(ROOT)
    config = (
        GateConfig(contracts=[ContractRun(files=(f,)) for f in runs[0].files]) if per_file else GateConfig()
    )
    result = GateResult()
    started = time.perf_counter()
    run_contracts(ROOT, {}, config, result, lambda _step: None)
    if not result.passed:
        raise SystemExit("gate contracts failed: " + "; ".join(f.describe() for f in result.failures))
    return time.perf_counter() - started


def demo_gate(scratch: Path, index: int) -> tuple[float, float]:
    """(seconds for static checks, seconds for the whole gate) on a fresh demo sync branch."""
    from sync.demo.build import build_demo
    from sync.gate import run_gate, run_static_checks
    from sync.gate.config import load_gate_config
    from sync.model.gate import GateResult
    from sync.reports.context import ReportContext
    from sync.window import run_window

    repos = build_demo(scratch / f"demo{index}")
    window = run_window(repos.upstream, repos.downstream, repos.to_pr, repos.from_pr)
    context = ReportContext(window.window, window.branch, window.outcomes)
    file_prs = {o.path: context.prs_for(o) for o in window.outcomes}
    started = time.perf_counter()
    run_static_checks(window.worktree, file_prs, load_gate_config(window.worktree), GateResult())
    static = time.perf_counter() - started
    started = time.perf_counter()
    result = run_gate(window.worktree, scratch / f"report{index}", file_prs)
    assert 116 in result.prs, "the demo gate must name #116"
    return static, time.perf_counter() - started


def _timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats
    console = Console()
    from sync.translator.vllm_flags import build_vllm_server_options, vllm_server_options

    started = time.perf_counter()
    build_vllm_server_options()  # imports vLLM and builds its parser: what the disk cache saves
    vllm_parser_s = time.perf_counter() - started
    vllm_server_options()  # make sure the cache exists
    cached_s = statistics.median(
        _timed(lambda: (vllm_server_options.cache_clear(), vllm_server_options())) for _ in range(5)
    )

    reference, together, isolated, static, whole = [], [], [], [], []
    with tempfile.TemporaryDirectory(prefix="vime-bench-gate-") as scratch:
        for index in range(repeats):
            console.print(f"run {index + 1}/{repeats}")
            reference.append(one_process_contracts())
            together.append(gate_contract_step(per_file=False))
            isolated.append(gate_contract_step(per_file=True))
            s, w = demo_gate(Path(scratch), index)
            static.append(s)
            whole.append(w)
    ref = statistics.median(reference)
    table = Table(title=f"gate timings, medians of {repeats} runs (seconds)")
    for column in ("what", "seconds", "x reference"):
        table.add_column(column)
    rows = [
        ("all contract files in one pytest process (reference)", ref),
        ("gate default contract step: all files, one subprocess", statistics.median(together)),
        ("the same files, one subprocess per file", statistics.median(isolated)),
        ("demo sync branch: static checks", statistics.median(static)),
        ("demo sync branch: whole gate (static + reward contract)", statistics.median(whole)),
        ("vLLM serve options: building vLLM's parser (first gate run)", vllm_parser_s),
        ("vLLM serve options: from the on-disk cache", cached_s),
    ]
    for name, seconds in rows:
        table.add_row(name, f"{seconds:.2f}", f"{seconds / ref:.2f}")
    console.print(table)


if __name__ == "__main__":
    main()
