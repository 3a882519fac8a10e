"""Training runs a user can trust, with the real engine, router, trainer and Ray.

- Ctrl-C (SIGINT to the whole process group, as a terminal sends it), and SIGTERM to train.py
  alone (as a job scheduler sends it), save the last trained step and leave within 10 s, with no
  process and no temporary directory behind. That run's reward
  hook is a synchronous function found only through the user's PYTHONPATH: the Ray workers
  import it as the contract runner would.
- An engine SIGKILLed between generation and the weight push: with ``--use-fault-tolerance`` it is
  restarted on the new weights and the run goes on, every step with its full batch and no sample
  twice; without the flag the run fails within seconds, naming the engine and the flag, and the
  step trained before the crash is saved.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest
import ray

from vime.backends.torch_utils import checkpoint as ckpt

ROOT = Path(__file__).resolve().parents[1]
BATCH, N = 4, 2


def _flags(train_flags, root: Path, steps: int) -> list[str]:
    return train_flags(
        "--num-rollout", str(steps), "--run-dir", str(root / "run"), "--vllm-kv-cache-memory-bytes", "256M",
        batch=BATCH, n=N,
    )  # fmt: skip


def _records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.slow
@pytest.mark.parametrize(
    "how",
    [
        pytest.param("ctrl-c", id="ctrl-c-to-the-group"),
        pytest.param("sigterm", id="sigterm-to-train.py-alone"),  # what a job scheduler or `kill` sends
    ],
)
def test_ctrl_c_saves_the_last_step_and_stops_everything(train_flags, tmp_path, how):
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "my_rewards.py").write_text(
        "from vime.rollout.rm_hub import rule_based_reward\n\n"
        "import os\n\n"
        "def score(args, sample, **kwargs):  # synchronous, and importable only through PYTHONPATH\n"
        "    with open(os.environ['HOOK_LOG'], 'a') as f:\n"
        "        f.write('scored\\n')\n"
        "    return float(rule_based_reward('math', sample))\n"
    )
    scratch = Path(
        tempfile.mkdtemp(prefix="vt-", dir="/tmp")
    )  # TMPDIR of the run; Ray's socket paths must stay short
    hook_log = tmp_path / "hook.log"
    env = dict(os.environ, PYTHONPATH=str(hooks), TMPDIR=str(scratch), HOOK_LOG=str(hook_log))
    save = tmp_path / "ckpt"
    cmd = [sys.executable, str(ROOT / "train.py"), *_flags(train_flags, tmp_path, 200), "--save", str(save),
           "--custom-rm-path", "my_rewards.score"]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    metrics = tmp_path / "run" / "metrics.jsonl"
    try:
        deadline = time.monotonic() + 420
        while len(_records(metrics)) < 2:
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "no two steps in 7 minutes"
            time.sleep(0.5)
        tree = [proc.pid] + [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
        if how == "ctrl-c":
            os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        else:
            os.kill(
                proc.pid, signal.SIGTERM
            )  # train.py alone: it must stop its engines, router and Ray itself
        sent = time.monotonic()
        _, err = proc.communicate(timeout=60)
        seconds = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    print(f"\n{how} to exit: {seconds:.1f}s; {len(tree)} processes in the run's tree")
    assert proc.returncode == 130, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    logged = [r["step"] for r in _records(metrics)]
    saved = ckpt.latest_iteration(save)
    assert saved is not None and saved >= logged[-1], (saved, logged, err[-2000:])
    assert f"saved step {saved} to {save}" in err
    assert (save / "rollout" / f"data_source_state_{saved}.json").is_file()
    time.sleep(2)
    left = [
        pid for pid in tree if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    ]
    assert not left, [psutil.Process(p).cmdline()[:4] for p in left]
    # vime's own temporary dirs (weights staging, logs) are gone; Ray's session logs and vLLM's
    # vllm_dist_* of a SIGKILLed server are theirs
    left_dirs = [p.name for p in scratch.iterdir() if p.name.startswith("vime")]
    shutil.rmtree(scratch, ignore_errors=True)
    assert not left_dirs, left_dirs
    assert hook_log.read_text().count("scored") >= 2 * BATCH * N  # the PYTHONPATH hook scored in the workers


def _kill_engine_before_push(monkeypatch, at_push: int, killed: dict) -> None:
    """SIGKILL engine 0 right before the ``at_push``-th weight push (1 is the push before step 0)."""
    from vime.ray.training_run import TrainingRun

    original = TrainingRun.update_weights
    calls = {"n": 0}

    def update_weights(self):
        calls["n"] += 1
        if calls["n"] == at_push:
            killed["pid"] = ray.get(self.rollout.kill_engine_server.remote(0))
            killed["at"] = time.monotonic()
        return original(self)

    monkeypatch.setattr(TrainingRun, "update_weights", update_weights)


@pytest.mark.slow
def test_engine_killed_at_the_weight_push_is_restarted_and_no_sample_is_lost(
    train_flags, tmp_path, ray_session, monkeypatch
):
    from train import train
    from vime.rollout.debug_data import load_rollout_data
    from vime.utils.arguments import parse_args

    steps = 3
    killed: dict = {}
    _kill_engine_before_push(monkeypatch, 2, killed)  # after step 0 trained, before its weights go out
    template = str(tmp_path / "rollout_{rollout_id}.pkl")
    args = parse_args([*_flags(train_flags, tmp_path, steps), "--use-fault-tolerance",
                       "--rollout-health-check-interval", "1", "--save-debug-rollout-data", template])  # fmt: skip
    records = train(args)
    assert killed.get("pid"), "the engine was not killed"
    assert [r["step"] for r in records] == list(range(steps))
    assert records[-1]["rollout/engine_restarts"] >= 1
    indices = []
    for step in range(steps):
        data = load_rollout_data(template, step)
        assert len(data["tokens"]) == BATCH * N  # the full batch, every step
        indices += data["sample_indices"]
    assert len(indices) == len(set(indices)), "a sample was trained on twice"
    # the restarted engine serves the pushed weights: step 1's log-probs match the trainer's
    assert records[1]["train/train_rollout_logprob_abs_diff"] < 1e-3


def _kill_engine_during_generation(monkeypatch, run_dir: Path, step: int, killed: dict) -> None:
    """SIGKILL engine 0's server (its pid file in the run's logs) 0.3 s into step ``step``'s generation."""
    from vime.ray.training_run import TrainingRun

    original = TrainingRun.generate

    def kill() -> None:
        (pid_file,) = (run_dir / "logs").glob("vllm_engine_0_port*[0-9].pid")
        killed["pid"] = int(pid_file.read_text().split()[0])
        os.kill(killed["pid"], signal.SIGKILL)
        killed["at"] = time.monotonic()

    def generate(self, rollout_id, evaluation=False):
        if rollout_id == step:
            threading.Timer(0.3, kill).start()
        return original(self, rollout_id, evaluation)

    monkeypatch.setattr(TrainingRun, "generate", generate)


@pytest.mark.slow
def test_without_fault_tolerance_a_dead_engine_fails_the_run(train_flags, tmp_path, ray_session, monkeypatch):
    from train import train
    from vime.utils.arguments import parse_args

    killed: dict = {}
    _kill_engine_during_generation(monkeypatch, tmp_path / "run", 1, killed)
    save = tmp_path / "ckpt"
    args = parse_args(
        [*_flags(train_flags, tmp_path, 3), "--rollout-health-check-interval", "1", "--save", str(save)]
    )
    with pytest.raises(Exception) as failure:
        train(args)
    seconds = time.monotonic() - killed["at"]
    print(f"\nkill to failure without fault tolerance: {seconds:.1f}s")
    message = str(failure.value)
    assert "vLLM engine 0" in message and "--use-fault-tolerance" in message, message[-2000:]
    # the kill (0.3 s into step 1) is found in step 1's generation or weight push, or in step 2's
    # generation when step 1 was quicker than that; a step is logged only once it is complete
    logged = [r["step"] for r in _records(tmp_path / "run" / "metrics.jsonl")]
    assert logged in ([0], [0, 1]), logged
    # the crash came outside training: the last trained step was saved (no --save-interval: only at the end)
    assert ckpt.latest_iteration(save) in (logged[-1], logged[-1] + 1)
