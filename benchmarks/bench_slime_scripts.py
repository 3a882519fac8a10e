"""slime's own launch scripts, translated by vime-sync, through vime's parser. Not part of the suite.

    .venv/bin/python benchmarks/bench_slime_scripts.py /work/.mirror/THUDM+slime/repo --rev 624b824a8 \\
        [--scratch /tmp/<you>/slime-scripts] [--json out.json] [--gpus 8] [--only run-qwen3-4B]

1. ``vime-sync translate SLIME --rev REV --out SCRATCH/tree --report SCRATCH/translate.json``.
2. Every translated ``scripts/run-*.sh`` and every run script under ``examples/`` runs with its
   launch stubbed (``vime/compat/launch_capture.py``: ``ray job submit ... -- python3 train.py``
   records the argument vector; ``pkill``, ``sleep``, ``ssh``, ``pip``, ``hf``... only log;
   ``nvidia-smi`` answers as an 8-GPU node), as on the cluster the recipes are written for:
   MASTER_ADDR=127.0.0.1, BASE_DIR=BASE_FOLDER=/root, WANDB_KEY set, and ``/root/slime`` is the
   translated tree.
3. Each captured vector goes to vime's parser (``vime/compat/launch_verdict.py``): parse, validate
   as on a GPU node, preflight. Per launch: flags honoured / refused / ignored / unknown and the
   verdict (parses, refused with vime's line, machine-bound, invalid, unrecognized); what only this
   machine refuses (missing checkpoints and data, GPUs) is listed apart.
4. A summary, and every unknown or ignored flag with the launches that pass it, grouped.

Everything is written under --scratch; nothing of slime's goes anywhere else.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from vime.compat.launch_capture import ENTRY_POINTS, Launch, run_script
from vime.compat.launch_verdict import LaunchVerdict, judge_launch, set_aside

console = Console(stderr=True)
CLUSTER_ENV = {  # what a cluster user has set: the head node, shared folders, a W&B key
    "MASTER_ADDR": "127.0.0.1",
    "BASE_DIR": "/root",
    "BASE_FOLDER": "/root",
    "WANDB_KEY": "stub-key",
    "WANDB_API_KEY": "stub-key",
}
SLIME_HOME = "/root/slime"  # where slime's examples expect the checkout
PASS_THROUGH = re.compile(r"(?<![\w-])(?:--no-vllm-|--vllm-)[a-z0-9][a-z0-9-]*")

# (group, pattern) for the list of flags that are still unknown or ignored
GROUPS = [
    ("left by the translation (--sglang-*)", r"^--sglang-"),
    ("--vllm-* that vLLM's serve parser lacks", r"^--(no-)?vllm-"),
    ("mixture of experts", r"^--(moe-|num-experts|expert-|enable-experts|num-shared)"),
    (
        "multi-token prediction / MLA",
        r"^--(mtp-|enable-mtp|q-lora|kv-lora|qk-head|qk-pos|v-head|mscale|multi-latent)",
    ),
    ("weight update", r"^--(update-weight|custom-update-weight)"),
    (
        "model architecture",
        r"^--(num-layers|hidden-size|ffn-|num-attention|group-query|num-query|kv-channels|"
        r"vocab-size|swiglu|normalization|norm-epsilon|rotary|qk-layernorm|disable-bias|add-qkv|untie|"
        r"position-embedding|use-rotary|spec|make-vocab|init-method|attention-output|use-gated|apply-layernorm|"
        r"post-|no-rope|rope|max-position)",
    ),
    (
        "parallelism and memory",
        r"^--(tensor-|pipeline-|context-|sequence-|recompute|decoder-|account-for|"
        r"overlap|use-distributed|optimizer|use-precision|accumulate|attention-softmax|attention-backend|"
        r"attention-dropout|hidden-dropout|distributed|num-workers|no-)",
    ),
]


def translate(slime: Path, rev: str, scratch: Path) -> tuple[Path, dict, float]:
    """The translated tree, vime-sync's JSON report, and the seconds it took."""
    tree = scratch / "tree"
    report = scratch / "translate.json"
    cli = Path(sys.executable).with_name("vime-sync")
    command = [str(cli)] if cli.exists() else [sys.executable, "-c", "from sync.cli import run; run()"]
    start = time.perf_counter()
    proc = subprocess.run(
        [*command, "translate", str(slime), "--rev", rev, "--out", str(tree), "--report", str(report)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        sys.exit(f"bench_slime_scripts: vime-sync translate failed: {proc.stderr.strip().splitlines()[-1:]}")
    return tree, json.loads(report.read_text()), time.perf_counter() - start


def launch_scripts(tree: Path) -> list[Path]:
    """``scripts/run-*.sh`` and the run scripts under ``examples/`` that start a trainer."""
    candidates = sorted(tree.glob("scripts/run-*.sh")) + sorted(tree.glob("examples/**/*.sh"))
    return [p for p in candidates if any(entry in p.read_text(errors="replace") for entry in ENTRY_POINTS)]


def hook_path(script: Path, tree: Path, launch: Launch) -> list[str]:
    """Where the launch's hooks import from: the runtime env's PYTHONPATH (``/root/slime`` is the
    tree), the script's folder, the tree."""
    entries = str(launch.runtime_env().get("env_vars", {}).get("PYTHONPATH", "")).split(":")
    mapped = [e.replace(SLIME_HOME, str(tree)) for e in entries if e]
    return [*mapped, str(script.parent), str(tree)]


def group_of(flag: str) -> str:
    return next((name for name, pattern in GROUPS if re.search(pattern, flag)), "slime's own and other")


def refused_flag(line: str) -> str:
    """The flag a refusal line is about (``error: --sglang-x (and 3 more ...`` -> ``--sglang-*``)."""
    first = line.removeprefix("error: ").removeprefix("train.py: error: ").split(" ", 1)[0].rstrip(":,")
    return "--sglang-* (left by the translation)" if first.startswith("--sglang-") else first


def unknown_pass_through(tree: Path, known: set[str]) -> Counter:
    """``--vllm-*`` names the translation wrote anywhere in the tree that vime's parser lacks."""
    found: Counter = Counter()
    for path in tree.rglob("*"):
        if path.is_file() and path.suffix in (".sh", ".py", ".md", ".yaml", ".yml"):
            found.update(f for f in PASS_THROUGH.findall(path.read_text(errors="replace")) if f not in known)
    return found


def describe(verdict: LaunchVerdict) -> str:
    if verdict.verdict == "parses":
        return "parses"
    return f"{verdict.verdict}: {verdict.line}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("slime", type=Path, help="slime's git repository")
    parser.add_argument("--rev", required=True)
    parser.add_argument("--scratch", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="write every launch's verdict here")
    parser.add_argument("--gpus", type=int, default=8, help="GPUs per node nvidia-smi reports (default 8)")
    parser.add_argument("--only", default=None, help="only scripts whose path contains this")
    opts = parser.parse_args()
    scratch = (opts.scratch or Path(tempfile.mkdtemp(prefix="bench-slime-scripts-"))).resolve()
    if scratch.exists() and any(scratch.iterdir()):
        sys.exit(f"bench_slime_scripts: --scratch {scratch} is not empty; pass a new folder")
    scratch.mkdir(parents=True, exist_ok=True)

    console.print(f"translating {opts.slime} at {opts.rev} into {scratch / 'tree'}")
    tree, report, translate_s = translate(opts.slime, opts.rev, scratch)
    scripts = [s for s in launch_scripts(tree) if opts.only is None or opts.only in str(s)]
    rows: list[dict] = []
    start = time.perf_counter()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as bar:  # fmt: skip
        task = bar.add_task("launch scripts", total=len(scripts))
        for script in scripts:
            rel = script.relative_to(tree).as_posix()
            bar.update(task, description=rel)
            run = run_script(
                script, tree, scratch, env=CLUSTER_ENV, relocate={SLIME_HOME: str(tree)}, gpus=opts.gpus
            )
            if not run.launches:
                rows.append(
                    {"script": rel, "launch": None, "script_rc": run.returncode, "script_error": run.one_line}
                )
            for index, launch in enumerate(run.launches):
                stand_ins = scratch / "stand-ins" / f"{rel}.{index}"
                verdict = judge_launch(
                    launch.args, stand_ins, hook_path(script, tree, launch), opts.gpus, tree
                )
                left = [f.flag for f in verdict.flags if f.flag.startswith("--sglang-")]
                then = None
                if left:  # what the user meets next after dropping them, as vime's line says
                    kept = launch.args
                    for flag in left:
                        kept = set_aside(kept, flag)
                    after = judge_launch(kept, stand_ins, hook_path(script, tree, launch), opts.gpus, tree)
                    then = {"verdict": after.verdict, "line": after.line, "dropped": left}
                rows.append({
                    "script": rel, "launch": launch.entry, "script_rc": run.returncode,
                    "script_error": run.one_line if run.returncode else "", "argv": launch.args,
                    "verdict": verdict.verdict, "line": verdict.line, "machine": verdict.machine,
                    "gpus_needed": verdict.gpus_needed, "without_left_flags": then,
                    "flags": [{"flag": f.flag, "status": f.status, "reason": f.reason} for f in verdict.flags],
                })  # fmt: skip
            bar.advance(task)
    judge_s = time.perf_counter() - start
    from vime.utils.arguments import build_parser

    known = {option for action in build_parser()._actions for option in action.option_strings}
    report["unknown_pass_through"] = unknown_pass_through(tree, known)
    print_report(rows, report, opts, translate_s, judge_s)
    if opts.json:
        opts.json.write_text(json.dumps({"rev": opts.rev, "rows": rows}, indent=1) + "\n")


def print_report(
    rows: list[dict], report: dict, opts: argparse.Namespace, translate_s: float, judge_s: float
) -> None:
    out = Console(highlight=False, soft_wrap=True)
    load = os.getloadavg()
    out.print(f"# slime {opts.rev} launch scripts on vime ({datetime.date.today()}, {platform.node()}, "
              f"{os.cpu_count()} CPUs, load {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f})")  # fmt: skip
    out.print(f"translation: {translate_s:.0f} s; launches captured and judged: {judge_s:.0f} s")
    left = report.get("launch_flags_left", [])
    launch_left = [f for f in left if f["path"].endswith(".sh")]
    bad = report["unknown_pass_through"]
    out.print(f"translation findings: {len(left)} launch flags left (no vime / vLLM flag; "
              f"{len({f['flag'] for f in left})} distinct), {len(launch_left)} of them in shell scripts")  # fmt: skip
    out.print(f"--vllm-* names written anywhere in the tree that vime's parser lacks: {len(bad)} distinct, "
              f"{sum(bad.values())} occurrences{': ' + ', '.join(sorted(bad)) if bad else ''}")  # fmt: skip
    launches = [r for r in rows if r["launch"]]
    out.print(f"\nscripts: {len({r['script'] for r in rows})}; launches captured: {len(launches)}")
    for row in rows:
        if row["launch"] is None:
            out.print(
                f"\n## {row['script']}: no launch captured (bash exit {row['script_rc']}: {row['script_error']})"
            )
            continue
        flags = row["flags"]
        count = Counter(f["status"] for f in flags)
        out.print(
            f"\n## {row['script']} -> {row['launch']} ({len(row['argv'])} arguments, {len(flags)} flags)"
        )
        if row["script_rc"]:
            out.print(f"   the script itself ends with exit {row['script_rc']}: {row['script_error']}")
        out.print(f"   honoured {count['honoured']}, refused {count['refused']}, ignored {count['ignored']}, "
                  f"unknown {count['unknown']}")  # fmt: skip
        out.print(f"   verdict: {row['verdict']}{': ' + row['line'] if row['line'] else ''}")
        then = row["without_left_flags"]
        if then:
            out.print(f"   without the {len(then['dropped'])} --sglang-* flag(s) the translation left: {then['verdict']}"
                      f"{': ' + then['line'] if then['line'] else ''}")  # fmt: skip
        for f in flags:
            if f["status"] != "honoured":
                out.print(f"   {f['status']:8} {f['flag']}: {f['reason']}")
        for line in row["machine"]:
            out.print(f"   machine-bound: {line}")
    verdicts = Counter(r["verdict"] for r in launches)
    refusals = Counter(r["line"] for r in launches if r["verdict"] == "refused")
    unknown, ignored = defaultdict(set), defaultdict(set)
    for r in launches:
        for f in r["flags"]:
            if f["status"] == "unknown":
                unknown[f["flag"]].add(r["script"])
            elif f["status"] == "ignored":
                ignored[(f["flag"], f["reason"])].add(r["script"])
    out.print("\n# summary")
    out.print(f"launches: {len(launches)}; " + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())))
    out.print(f"scripts without a launch: {sum(1 for r in rows if r['launch'] is None)}")
    out.print(f"distinct unknown flags (argparse 'unrecognized'): {len(unknown)}; "
              f"in {sum(1 for r in launches if any(f['status'] == 'unknown' for f in r['flags']))} launches")  # fmt: skip
    out.print(f"distinct ignored flags: {len({flag for flag, _ in ignored})}; "
              f"in {sum(1 for r in launches if any(f['status'] == 'ignored' for f in r['flags']))} launches")  # fmt: skip
    out.print("refusals that stop a launch, by the flag they name:")
    by_flag = Counter(refused_flag(line) for line in refusals.elements())
    for flag, n in by_flag.most_common():
        out.print(f"  {n} x {flag}")
    out.print("their lines:")
    for line, n in refusals.most_common():
        out.print(f"  {n} x {line}")
    thens = [r["without_left_flags"] for r in launches if r["without_left_flags"]]
    out.print(f"launches stopped by --sglang-* flags the translation left: {len(thens)}; without them: "
              + ", ".join(f"{k} {v}" for k, v in sorted(Counter(t["verdict"] for t in thens).items())))  # fmt: skip
    for line, n in Counter(t["line"] for t in thens if t["line"]).most_common():
        out.print(f"  {n} x then: {line}")
    for title, table in (("unknown", unknown), ("ignored", ignored)):
        out.print(f"\n# {title} flags, grouped (launches passing each)")
        grouped = defaultdict(list)
        for key, scripts in table.items():
            flag = key if isinstance(key, str) else key[0]
            grouped[group_of(flag)].append((flag, key, len(scripts)))
        for name, items in sorted(grouped.items()):
            out.print(f"## {name} ({len(items)})")
            for flag, key, n in sorted(items):
                why = "" if isinstance(key, str) else f" ({key[1]})"
                out.print(f"  {flag}: {n}{why}")


if __name__ == "__main__":
    main()
