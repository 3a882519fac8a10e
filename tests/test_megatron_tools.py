"""tools/convert_hf_to_torch_dist.py and tools/convert_torch_dist_to_hf.py: HF -> Megatron dist
checkpoint -> HF gives back the very same tensors.

The conversions run in this process on the CPU (``torch.cuda.current_device`` and
``torch.cuda.synchronize`` patched inside the fixture only); the command lines themselves refuse at once without a GPU, which is checked too.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("megatron.core")

from megatron_cpu_support import megatron_on_cpu

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def megatron_cpu():
    yield from megatron_on_cpu()


def test_hf_to_dist_checkpoint_and_back_is_lossless(megatron_cpu, tiny_model_dir, tmp_path) -> None:
    from safetensors.torch import load_file

    saved = _tool("convert_hf_to_torch_dist").convert(tiny_model_dir, tmp_path / "ckpt")
    assert saved.name == "iter_0000000" and (tmp_path / "ckpt" / "latest_checkpointed_iteration.txt").exists()
    out = _tool("convert_torch_dist_to_hf").convert(tmp_path / "ckpt", tiny_model_dir, tmp_path / "hf")
    ref = load_file(str(Path(tiny_model_dir) / "model.safetensors"))
    got = {k: v for f in out.glob("*.safetensors") for k, v in load_file(str(f)).items()}
    assert set(got) == set(ref)
    assert all(torch.equal(got[k], ref[k]) for k in ref)
    assert (out / "tokenizer.json").exists() and (out / "config.json").exists()

    with pytest.raises(FileExistsError, match="already exists"):  # never overwrites a checkpoint
        _tool("convert_hf_to_torch_dist").convert(tiny_model_dir, tmp_path / "ckpt")
    with pytest.raises(FileExistsError, match="choose an empty --output"):
        _tool("convert_torch_dist_to_hf").convert(tmp_path / "ckpt", tiny_model_dir, out)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without a GPU")
def test_command_line_refuses_without_gpu(tmp_path) -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "convert_hf_to_torch_dist.py"), "--hf-checkpoint", str(tmp_path),
         "--save", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    assert "needs an NVIDIA GPU" in last and "--train-backend torch" in last
    assert not (tmp_path / "out").exists()
