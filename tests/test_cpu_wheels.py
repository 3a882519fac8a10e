"""vime hides a CUDA build of torchvision/torchaudio/torchcodec beside a CPU torch (vime.utils.cpu_wheels).

The subprocess test plants a real (deliberately broken) ``torchvision`` distribution on PYTHONPATH,
with the version PyPI's wheel has and an ``__init__`` that fails the way the CUDA build does."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata

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


@pytest.mark.skipif(not CPU_TORCH, reason="the guard acts only beside a +cpu torch")
def test_import_vime_hides_a_broken_torchvision(tmp_path):
    package = tmp_path / "torchvision"
    package.mkdir()
    (package / "__init__.py").write_text('raise RuntimeError("operator torchvision::nms does not exist")\n')
    info = tmp_path / "torchvision-0.28.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torchvision\nVersion: 0.28.0\n")
    check = (
        "import importlib.util, sys\n"
        "import vime\n"
        "assert importlib.util.find_spec('torchvision') is None\n"
        "try:\n    import torchvision\nexcept ImportError:\n    print('hidden')\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "hidden", done.stderr
    # and without vime the planted package really is the broken one (the test would prove nothing otherwise)
    plain = subprocess.run(
        [sys.executable, "-c", "import torchvision"], env=env, capture_output=True, text=True, timeout=120
    )
    assert "torchvision::nms" in plain.stderr
