"""The Megatron actor on two GPUs: parity with HF, export, a train step, resume, offload.

Each case starts ``tests/megatron_gpu_checks.py`` under torchrun, one process per GPU. Without two
CUDA GPUs (every CI machine) the tests skip.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason="needs two CUDA GPUs"
    ),
]

CHECKS = Path(__file__).with_name("megatron_gpu_checks.py")


@pytest.mark.parametrize("tp,pp", [(2, 1), (1, 1), (1, 2)], ids=["tp2", "dp2", "pp2"])
def test_megatron_actor_on_two_gpus(tmp_path, tp: int, pp: int) -> None:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    cmd += [str(CHECKS), "--tp", str(tp), "--pp", str(pp), "--workdir", str(tmp_path)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    out = run.stdout + run.stderr
    print("\n".join(line for line in out.splitlines() if line.startswith("CHECK")))
    assert run.returncode == 0, out[-3000:]
    for check in (
        "logprobs_match_hf",
        "export_equals_hf",
        "train_step_follows_advantages",
        "resume_replays_same_step",
        "offload_frees_and_restores",
    ):
        assert f"CHECK {check} ok" in out, check
    assert "ALL CHECKS PASSED" in out


BACKEND_CHECKS = Path(__file__).with_name("megatron_gpu_backend_checks.py")


@pytest.mark.parametrize("tp", [2, 1], ids=["tp2", "dp2"])
def test_megatron_train_backend_interface_on_two_gpus(tmp_path, tp: int) -> None:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    cmd += [str(BACKEND_CHECKS), "--tp", str(tp), "--workdir", str(tmp_path)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    out = run.stdout + run.stderr
    print("\n".join(line for line in out.splitlines() if line.startswith("CHECK")))
    assert run.returncode == 0, out[-3000:]
    for check in ("backend_train_follows_rewards", "backend_export_matches", "backend_resume_is_exact"):
        assert f"CHECK {check} ok" in out, check
