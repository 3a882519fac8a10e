"""Run a worker script as two torch.distributed ranks on this machine (gloo), for the CPU parallel tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.net_helpers import free_port


def run_two_ranks(worker: Path, *args: str, timeout_s: int = 600) -> None:
    """Start ``worker`` as ranks 0 and 1 of one group (env:// rendezvous); fail with both outputs' tails
    unless both exit 0."""
    port = free_port("127.0.0.1")
    procs = [
        subprocess.Popen(
            [sys.executable, str(worker), *args],
            env={
                **os.environ,
                "RANK": str(r),
                "WORLD_SIZE": "2",
                "LOCAL_RANK": str(r),
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port),
            },
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(2)
    ]
    outputs = [p.communicate(timeout=timeout_s)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), "\n".join(o[-3000:] for o in outputs)
