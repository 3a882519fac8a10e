"""Bad runs are refused before anything starts: each case one line, within seconds.

Every case runs the real ``train.py`` in a subprocess (no Ray, no engine is reached) and
records how long the refusal took; the figures are printed for docs/training.md, not asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

HOOKS = """
import math

async def raises(args, sample, **kw):
    raise KeyError("answer")

def returns_text(args, sample, **kw):
    return "1.0"

async def returns_nan(args, sample, **kw):
    return math.nan

def too_few(args):
    return 0.0

def fine(args, sample, **kw):  # a synchronous reward: training accepts it
    return 1.0
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, tiny_model_dir):
    root = tmp_path_factory.mktemp("preflight")
    (root / "hooks").mkdir()
    (root / "hooks" / "user_rewards.py").write_text(HOOKS)
    good = root / "good.jsonl"
    good.write_text(
        "".join(json.dumps({"input": f"What is {i}+1?", "label": str(i + 1)}) + "\n" for i in range(4))
    )
    (root / "bad.jsonl").write_text('{"input": "ok", "label": "1"}\n{not json\n')
    (root / "nolabel.jsonl").write_text('{"input": "ok"}\n')
    return root


def _train(workspace, tiny_model_dir, *flags, script="train.py", pythonpath=True):
    base = ["--hf-checkpoint", str(tiny_model_dir), "--prompt-data", str(workspace / "good.jsonl"),
            "--input-key", "input", "--label-key", "label", "--rollout-batch-size", "2",
            "--n-samples-per-prompt", "2", "--num-rollout", "2", "--rm-type", "math"]  # fmt: skip
    env = {"PATH": "/usr/bin:/bin", "HOME": str(workspace), "HF_HUB_OFFLINE": "1"}
    if pythonpath:
        env["PYTHONPATH"] = str(workspace / "hooks")
    started = time.monotonic()
    done = subprocess.run([sys.executable, script, *base, *flags], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    return done, time.monotonic() - started


CASES = {
    "missing prompt file": (["--prompt-data", "/nonexistent/p.jsonl"], "not found: check --prompt-data"),
    "malformed prompt file": (["--prompt-data", "{ws}/bad.jsonl"], "line 2 is not valid JSON"),
    "label key missing": (["--prompt-data", "{ws}/nolabel.jsonl"], "has no key 'label'"),
    "unimportable hook": (["--custom-rm-path", "no_such_pkg.score"], "module 'no_such_pkg' not found"),
    "hook signature": (["--custom-rm-path", "user_rewards.too_few"], "but vime calls fn(args, sample)"),
    "reward raises": (["--custom-rm-path", "user_rewards.raises"], "raised KeyError"),
    "reward returns a string": (["--custom-rm-path", "user_rewards.returns_text"], "returned str"),
    "reward returns NaN": (["--custom-rm-path", "user_rewards.returns_nan"], "returned nan"),
    "debug path template": (["--save-debug-rollout-data", "/tmp/rollout.pkl"], "has no {rollout_id}"),
    "save-hf template": (["--save-hf", "/tmp/hf_{step}"], "only {rollout_id} is filled in, not {step}"),
    "--vllm-uds": (["--vllm-uds", "/tmp/vime.sock"], "--vllm-uds makes vllm serve listen on a unix socket"),
    "--vllm-grpc": (["--vllm-grpc"], "--vllm-grpc replaces the HTTP API"),
    "--no-vllm-enable-scale-out": (["--no-vllm-enable-scale-out"], "--no-vllm-enable-scale-out"),
    "--vllm-tensor-parallel-size": (["--vllm-tensor-parallel-size", "2"], "--vllm-tensor-parallel-size 2"),
    "--num-rollout 0": (["--num-rollout", "0"], "--num-rollout must be 1 or more"),
    "typo'd flag": (["--rollout-batchsize", "2"], "did you mean --rollout-batch-size"),
}


def _refusal(workspace, tiny_model_dir, flags, capsys) -> tuple[str, float]:
    """Run train.py's entry point in this process (parse, validate, preflight); return stderr and seconds."""
    from vime.ray.training_run import run_main

    base = ["--hf-checkpoint", str(tiny_model_dir), "--prompt-data", str(workspace / "good.jsonl"),
            "--input-key", "input", "--label-key", "label", "--rollout-batch-size", "2",
            "--n-samples-per-prompt", "2", "--num-rollout", "2", "--rm-type", "math"]  # fmt: skip

    def must_not_start(args):
        raise AssertionError("the run started")

    started = time.monotonic()
    with pytest.raises(SystemExit) as exit_info:
        run_main(must_not_start, base + flags)
    seconds = time.monotonic() - started
    assert exit_info.value.code == 2
    return capsys.readouterr().err, seconds


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_refused_before_anything_starts_in_one_line(
    workspace, tiny_model_dir, case, capsys, monkeypatch
):
    monkeypatch.syspath_prepend(str(workspace / "hooks"))
    flags, expected = CASES[case]
    err, seconds = _refusal(
        workspace, tiny_model_dir, [f.replace("{ws}", str(workspace)) for f in flags], capsys
    )
    lines = [line for line in err.strip().splitlines() if line.strip()]
    with capsys.disabled():
        print(f"\n{case}: refused after {seconds:.1f}s: {lines[-1] if lines else ''}")
    assert expected in lines[-1], err[-2000:]
    assert "Traceback" not in err and len([line for line in lines if "error" in line]) == 1, err[-2000:]


def test_refusal_from_a_cold_start_is_quick(workspace, tiny_model_dir):
    """The whole process, imports included, for the slowest kind of check (a hook import + reward probe)."""
    done, seconds = _train(workspace, tiny_model_dir, "--custom-rm-path", "user_rewards.returns_nan")
    print(f"\ncold start to the error: {seconds:.1f}s")
    assert done.returncode == 2 and "returned nan" in done.stderr.splitlines()[-1], done.stderr[-2000:]
    assert "Traceback" not in done.stderr


def test_hook_found_only_through_pythonpath(workspace, tiny_model_dir):
    """A synchronous reward on PYTHONPATH alone passes the checks; without PYTHONPATH it is refused."""
    from vime.preflight import check_hooks, probe_reward
    from vime.utils.arguments import parse_args

    args = parse_args(["--hf-checkpoint", str(tiny_model_dir), "--prompt-data", str(workspace / "good.jsonl"),
                       "--rollout-batch-size", "2", "--n-samples-per-prompt", "2", "--num-rollout", "1",
                       "--label-key", "label", "--custom-rm-path", "user_rewards.fine"])  # fmt: skip
    sys.path.insert(0, str(workspace / "hooks"))
    try:
        probe_reward(args, check_hooks(args)["custom_rm_path"], {"input": "What is 1+1?", "label": "2"})
    finally:
        sys.path.remove(str(workspace / "hooks"))
    done, _ = _train(workspace, tiny_model_dir, "--custom-rm-path", "user_rewards.fine", pythonpath=False)
    assert done.returncode == 2 and "module 'user_rewards' not found" in done.stderr, done.stderr[-2000:]


def test_short_help_lists_vime_flags_only(workspace, tiny_model_dir):
    done = subprocess.run(
        [sys.executable, "train.py", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert "--use-fault-tolerance" in done.stdout and "--help-all" in done.stdout
    assert "--vllm-max-model-len" not in done.stdout  # pass-through flags are behind --help-all
    # vime's own groups (Megatron's model / runtime / MoE flags included) without the pass-through
    # --vllm-* / --router-* ones and without the refused flags, which --help-all adds
    assert len(done.stdout.splitlines()) < 1000
    assert "--multi-latent-attention" not in done.stdout


def test_every_vime_flag_has_help_text():
    from vime.utils.arguments import build_parser

    parser = build_parser(engine_layer=False)
    missing = [a.option_strings[0] for a in parser._actions if a.option_strings and not a.help]
    assert not missing, f"flags without help text: {missing}"


def test_colocated_on_a_gpu_the_trainer_starts_before_the_engines_offloaded_or_not(monkeypatch):
    """vLLM sizes its KV cache from the GPU memory it sees while profiling: a trainer kept on the GPU
    (--no-offload-train) must be built before that, not beside it."""
    from argparse import Namespace

    import vime.utils.args.validation as validation
    from vime.ray.training_run import trainer_first

    def args(**kw):
        return Namespace(**({"colocate": True, "offload_train": True, "debug_rollout_only": False} | kw))

    monkeypatch.setattr(validation, "has_gpu", lambda: True)
    assert trainer_first(args()) and trainer_first(args(offload_train=False))
    assert not trainer_first(args(colocate=False)) and not trainer_first(args(debug_rollout_only=True))
    monkeypatch.setattr(validation, "has_gpu", lambda: False)
    assert not trainer_first(args())


def test_an_engine_kv_cache_sized_in_bytes_starts_beside_the_trainer():
    """--vllm-kv-cache-memory-bytes: vLLM does not profile, so the trainer need not come first; the
    first push then sends the trainer out like every step's end."""
    from argparse import Namespace

    from vime.utils.args.start_order import StartOrder

    def order(on_gpu=True, **kw):
        base = {"colocate": True, "offload_train": True, "debug_rollout_only": False}
        return StartOrder.from_args(Namespace(**(base | kw)), on_gpu=on_gpu)

    sized = order(vllm_kv_cache_memory_bytes="16G")
    assert sized.side_by_side and not sized.trainer_first
    assert order().trainer_first and not order().side_by_side
    assert not order(on_gpu=False, vllm_kv_cache_memory_bytes="16G").side_by_side  # CPU: nothing to share
    assert not order(colocate=False, vllm_kv_cache_memory_bytes="16G").side_by_side
    # vLLM still wants its utilisation share free at its start: the default 0.9 leaves the trainer nothing
    assert "--vllm-gpu-memory-utilization" in sized.refusal()
    assert order(vllm_kv_cache_memory_bytes="16G", vllm_gpu_memory_utilization="0.2").refusal() is None
    assert order().refusal() is None


def test_the_first_weight_push_hands_over_by_the_start_order(monkeypatch):
    """Trainer first: it was offloaded at start, so it comes back for the push and leaves again.
    Side by side: both are on the GPU already; the push goes straight, then the trainer leaves."""
    from argparse import Namespace

    import vime.utils.args.validation as validation
    from vime.ray.training_run import TrainingRun

    class RecordingTrainer:
        def __init__(self):
            self.calls = []

        def update_weights(self, rollout, **_):
            self.calls.append("update_weights")
            return 0.0

        def offload(self):
            self.calls.append("offload")

        def onload(self):
            self.calls.append("onload")

    def first_push(**kw):
        args = Namespace(
            colocate=True, offload_train=True, offload_rollout=False, debug_rollout_only=False,
            debug_train_only=False, **kw,
        )  # fmt: skip
        trainer = RecordingTrainer()
        TrainingRun(args, trainer, object(), None, None, 0)._first_weight_sync()
        return trainer.calls

    monkeypatch.setattr(validation, "has_gpu", lambda: True)
    assert first_push() == ["onload", "update_weights", "offload"]
    assert first_push(vllm_kv_cache_memory_bytes="16G") == ["update_weights", "offload"]
