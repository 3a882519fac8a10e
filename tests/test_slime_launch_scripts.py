"""A slime-style launch, translated by vime-sync and run with its launch stubbed, parses on vime
with every flag honoured: none accepted and ignored, none unrecognized.

The run script and the model script are written here in slime's shape (process clean-up, Ray
start, bash arrays, ``ray job submit -- python3 train.py``), with the tiny local model's real
architecture in the model script. ``vime-sync translate`` turns them into vime's; bash runs the
translated script with stub executables first on PATH (``vime/compat/launch_capture.py``: nothing
real starts), and the captured argument vector goes through vime's parser, validation and
preflight (``vime/compat/launch_verdict.py``) as on a one-GPU node. The same machinery runs
slime's own scripts in ``benchmarks/bench_slime_scripts.py``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sync.cli import app
from vime.compat.launch_capture import run_script
from vime.compat.launch_verdict import ParserFacts, judge_flags, judge_launch

pytest.importorskip("vllm")

RUN_SCRIPT = """#!/bin/bash

# for rerun the task
pkill -9 sglang
sleep 3
ray stop --force
pkill -9 ray
pkill -9 python
sleep 3

set -ex

export PYTHONUNBUFFERED=1

NVLINK_COUNT=$(nvidia-smi topo -m 2>/dev/null | grep -o 'NV[0-9][0-9]*' | wc -l)
if [ "$NVLINK_COUNT" -gt 0 ]; then
    HAS_NVLINK=1
else
    HAS_NVLINK=0
fi
NUM_GPUS=$(nvidia-smi -L 2>/dev/null | wc -l | tr -d ' ')

SCRIPT_DIR="$(cd -- "$(dirname -- "${{BASH_SOURCE[0]}}")" &>/dev/null && pwd)"
source "${{SCRIPT_DIR}}/models/tiny-qwen2.sh"

CKPT_ARGS=(
   --hf-checkpoint {model}
   --save {save}
   --save-interval 20
)

ROLLOUT_ARGS=(
   --prompt-data {prompts}
   --input-key input
   --label-key label
   --apply-chat-template
   --rollout-shuffle
   --rm-type math
   --num-rollout 3
   --rollout-batch-size 4
   --n-samples-per-prompt 2
   --rollout-max-response-len 64
   --rollout-temperature 1
   --global-batch-size 8
   --balance-data
)

EVAL_ARGS=(
   --eval-interval 20
   --eval-prompt-data arithmetic {prompts}
   --n-samples-per-eval-prompt 2
   --eval-max-response-len 64
   --eval-top-p 1
)

PERF_ARGS=(
   --tensor-model-parallel-size 1
   --pipeline-model-parallel-size 1
   --context-parallel-size 1
   --expert-model-parallel-size 1
   --expert-tensor-parallel-size 1

   --recompute-granularity full
   --recompute-method uniform
   --recompute-num-layers 1

   # --micro-batch-size 1
   --use-dynamic-batch-size
   --max-tokens-per-gpu 2048
)

GRPO_ARGS=(
   --advantage-estimator grpo
   --use-kl-loss
   --kl-loss-coef 0.00
   --kl-loss-type low_var_kl
   --entropy-coef 0.00
   --eps-clip 0.2
   --eps-clip-high 0.28
)

OPTIMIZER_ARGS=(
   --optimizer adam
   --lr 1e-6
   --lr-decay-style constant
   --weight-decay 0.1
   --adam-beta1 0.9
   --adam-beta2 0.98
)

SGLANG_ARGS=(
   --rollout-num-gpus-per-engine 1
   --sglang-mem-fraction-static 0.7 --sglang-cuda-graph-max-bs 32
   --sglang-max-running-requests 64
   --sglang-context-length 1024
)

MISC_ARGS=(
   # default dropout in megatron is 0.1
   --attention-dropout 0.0
   --hidden-dropout 0.0
   --accumulate-allreduce-grads-in-fp32
   --attention-softmax-in-fp32
   --attention-backend flash
)

ray start --head --node-ip-address 127.0.0.1 --num-gpus ${{NUM_GPUS}} --disable-usage-stats

RUNTIME_ENV_JSON="{{
  \\"env_vars\\": {{
    \\"PYTHONPATH\\": \\"/root/Megatron-LM/\\",
    \\"CUDA_DEVICE_MAX_CONNECTIONS\\": \\"1\\",
    \\"NCCL_NVLS_ENABLE\\": \\"${{HAS_NVLINK}}\\"
  }}
}}"

ray job submit --address="http://127.0.0.1:8265" \\
   --runtime-env-json="${{RUNTIME_ENV_JSON}}" \\
   -- python3 train.py \\
   --actor-num-nodes 1 \\
   --actor-num-gpus-per-node ${{NUM_GPUS}} \\
   --colocate \\
   ${{MODEL_ARGS[@]}} \\
   ${{CKPT_ARGS[@]}} \\
   ${{ROLLOUT_ARGS[@]}} \\
   ${{OPTIMIZER_ARGS[@]}} \\
   ${{GRPO_ARGS[@]}} \\
   ${{PERF_ARGS[@]}} \\
   ${{EVAL_ARGS[@]}} \\
   ${{SGLANG_ARGS[@]}} \\
   ${{MISC_ARGS[@]}}
"""


def model_script(config: dict) -> str:
    """slime's scripts/models/<model>.sh for the checkpoint's config.json (the tiny Qwen2 model)."""
    return f"""MODEL_ARGS=(
   --swiglu
   --num-layers {config["num_hidden_layers"]}
   --hidden-size {config["hidden_size"]}
   --ffn-hidden-size {config["intermediate_size"]}
   --num-attention-heads {config["num_attention_heads"]}
   --group-query-attention
   --num-query-groups {config["num_key_value_heads"]}
   --use-rotary-position-embeddings
   --disable-bias-linear
   --add-qkv-bias
   --normalization "RMSNorm"
   --norm-epsilon {config["rms_norm_eps"]}
   --rotary-base "${{MODEL_ARGS_ROTARY_BASE:-{config["rope_parameters"]["rope_theta"]:g}}}"
   --vocab-size {config["vocab_size"]}
   --kv-channels {config["head_dim"]}
   --untie-embeddings-and-output-weights
)
"""


@pytest.fixture(scope="module")
def launch(tmp_path_factory, tiny_model_dir, arithmetic_prompts):
    """slime's files written, translated by vime-sync, and the translated run script run with stubs."""
    root = tmp_path_factory.mktemp("slime-launch")
    slime, tree = root / "slime", root / "translated"
    config = json.loads((Path(tiny_model_dir) / "config.json").read_text())
    run = RUN_SCRIPT.format(model=tiny_model_dir, prompts=arithmetic_prompts, save=root / "ckpt")
    (slime / "scripts" / "models").mkdir(parents=True)
    (slime / "scripts" / "run-tiny-qwen2.sh").write_text(run)
    (slime / "scripts" / "models" / "tiny-qwen2.sh").write_text(model_script(config))
    result = CliRunner().invoke(app, ["translate", str(slime), "--out", str(tree), "--no-conformance"])
    assert result.exit_code == 0, result.output
    script = tree / "scripts" / "run-tiny-qwen2.sh"
    captured = run_script(script, tree, root, gpus=1)
    return script, captured, root


def test_translation_gives_vllm_flags(launch):
    script, _captured, _root = launch
    text = script.read_text()
    assert (
        "VLLM_ARGS=(" in text
        and "${VLLM_ARGS[@]}" in text
        and "sglang" not in text.replace("pkill -9 vllm", "")
    )
    assert "--vllm-gpu-memory-utilization 0.7 --vllm-max-cudagraph-capture-size 32" in text
    assert "--vllm-max-num-seqs 64" in text and "--vllm-max-model-len 1024" in text


def test_the_launch_is_captured_and_nothing_real_runs(launch):
    _script, captured, _root = launch
    assert captured.returncode == 0, captured.stderr_tail
    [only] = captured.launches
    assert only.entry == "train.py"
    assert only.args[:5] == ["--actor-num-nodes", "1", "--actor-num-gpus-per-node", "1", "--colocate"]
    assert only.args[-2:] == ["--attention-backend", "flash"]
    assert "--num-query-groups" in only.args and "--vllm-max-num-seqs" in only.args
    assert only.runtime_env()["env_vars"]["NCCL_NVLS_ENABLE"] == "0"  # the stub: one GPU, no NVLink
    tools = {call["tool"] for call in captured.calls}
    assert {"pkill", "sleep", "ray", "nvidia-smi"} <= tools  # answered by stubs, never the real ones


def test_every_flag_is_honoured_and_the_launch_parses(launch):
    """Fails when any flag of the launch is accepted and ignored, refused, or unrecognized."""
    script, captured, root = launch
    tree = script.parents[1]
    verdict = judge_launch(captured.launches[0].args, root / "stand-ins", [str(script.parent)], 1, tree)
    not_honoured = [f"{f.flag} {f.status}: {f.reason}" for f in verdict.flags if f.status != "honoured"]
    assert not not_honoured, not_honoured
    assert (verdict.verdict, verdict.line) == ("parses", "")
    assert verdict.gpus_needed == 1
    # this machine has no GPU: that is the only thing between the launch and a run here
    assert all(line.startswith(("GPUs:", "no GPU here:")) for line in verdict.machine), verdict.machine


def test_ignored_and_unknown_flags_are_caught():
    """The judge itself: a flag no code reads, a flag whose help says it is unused, an unknown one."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float)
    parser.add_argument("--frobnicate-level", type=int)
    parser.add_argument(
        "--compat-only", action="store_true", help="accepted for compatibility; vime does not use it yet"
    )
    argv = ["--lr", "1e-6", "--frobnicate-level", "3", "--compat-only", "--not-a-flag", "1"]
    statuses = {f.flag: f.status for f in judge_flags(argv, ParserFacts.of(parser), {})}
    assert statuses == {
        "--lr": "honoured",
        "--frobnicate-level": "ignored",
        "--compat-only": "ignored",
        "--not-a-flag": "unknown",
    }


def test_capture_keeps_bash_quoting_and_makes_folders_only_in_scratch(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    outside = tmp_path / "elsewhere" / "models"
    script = scratch / "run.sh"
    script.write_text(
        "set -e\n"
        f"mkdir -p {outside} {scratch}/logs\n"
        "ARGS=(--a 'x y' --b '{\"k\": 1}'\n   --c 1 2 3)\n"
        'ray job submit --address=http://127.0.0.1:8265 -- python3 /opt/slime/train_async.py "${ARGS[@]}" --d\n'
        "python3 train.py --e 1\n"
        "python3 -c 'print(1)'\n"
    )
    captured = run_script(script, scratch, scratch)
    assert captured.returncode == 0, captured.stderr_tail
    assert [(launch.entry, launch.args) for launch in captured.launches] == [
        ("train_async.py", ["--a", "x y", "--b", '{"k": 1}', "--c", "1", "2", "3", "--d"]),
        ("train.py", ["--e", "1"]),
    ]
    assert (scratch / "logs").is_dir() and not outside.exists()
    mkdir = next(call for call in captured.calls if call["tool"] == "mkdir")
    assert mkdir["skipped"] == [str(outside)]
