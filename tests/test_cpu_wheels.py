"""vime hides a CUDA build of torchvision/torchaudio/torchcodec beside a CPU torch (vime.utils.cpu_wheels).

The subprocess test plants a real (deliberately broken) ``torchvision`` distribution on PYTHONPATH,
with the version PyPI's wheel has and an ``__init__`` that fails the way the CUDA build does."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from vime.utils.cpu_wheels import unusable_beside_torch

CPU_TORCH = metadata.version("torch").endswith("+cpu")


@pytest.mark.parametrize(
    ("torch_version", "package_version", "unusable"),
    [
        ("2.13.0+cpu", "0.28.0", True),  # PyPI's CUDA torchvision beside the CPU torch
        ("2.13.0+cpu", "0.28.0+cpu", False),  # the matching CPU build works
        ("2.13.0", "0.28.0", False),  # a CUDA torch: leave everything alone
        ("2.13.0+cpu", None, False),  # not installed
        (None, "0.28.0", False),
    ],
)
def test_which_builds_are_unusable(torch_version, package_version, unusable):
    assert unusable_beside_torch(torch_version, package_version) is unusable


def _plant_broken_torchvision(root: Path) -> str:
    """A torchvision 0.28.0 distribution that fails to import as PyPI's CUDA build does here."""
    package = root / "torchvision"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('raise RuntimeError("operator torchvision::nms does not exist")\n')
    info = root / "torchvision-0.28.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torchvision\nVersion: 0.28.0\n")
    return os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))


@pytest.mark.skipif(not CPU_TORCH, reason="the guard acts only beside a +cpu torch")
def test_import_vime_hides_a_broken_torchvision(tmp_path):
    pythonpath = _plant_broken_torchvision(tmp_path)
    check = (
        "import importlib.util, sys\n"
        "import vime\n"
        "assert importlib.util.find_spec('torchvision') is None\n"
        "try:\n    import torchvision\nexcept ImportError:\n    print('hidden')\n"
    )
    env = {**os.environ, "PYTHONPATH": pythonpath}
    done = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "hidden", done.stderr
    # and without vime the planted package really is the broken one (the test would prove nothing otherwise)
    plain = subprocess.run(
        [sys.executable, "-c", "import torchvision"], env=env, capture_output=True, text=True, timeout=120
    )
    assert "torchvision::nms" in plain.stderr


@pytest.mark.slow
@pytest.mark.skipif(not CPU_TORCH, reason="the guard acts only beside a +cpu torch")
def test_the_engine_starts_beside_a_broken_torchvision(tiny_model_dir, tmp_path):
    """vime's server command (vime.backends.vllm_utils.api_server) keeps the guard in vLLM's spawned
    engine process too; without it this server dies importing torchvision."""
    from vime.backends.vllm_utils.server_process import ServerProcess, build_server_command, server_env
    from vime.utils.http_utils import allocate_ports

    env = server_env({"PYTHONPATH": _plant_broken_torchvision(tmp_path / "plant")})
    (port,) = allocate_ports(1)
    flags = [
        "--enforce-eager",
        "--kv-cache-memory-bytes",
        "256M",
        "--max-model-len",
        "512",
        "--enable-scale-out",
    ]
    server = ServerProcess(
        build_server_command(str(tiny_model_dir), "127.0.0.1", port, flags), tmp_path / "e.log", env
    )
    server.start()
    try:
        server.wait_healthy(f"http://127.0.0.1:{port}", timeout_s=300)
    finally:
        server.stop()
    assert "torchvision::nms" not in (tmp_path / "e.log").read_text()
