"""``--train-backend megatron`` with ``--lora-rank`` against the torch backend (PEFT), on the CPU, same adapter.

Both start from one saved adapter (``--lora-adapter-path``), train one rollout on the same batch and
must then agree on log-probs and on the adapter they export; the Megatron checkpoint holds the
adapter alone and resumes to the same log-probs.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("megatron.core")

from megatron_cpu_support import megatron_on_cpu
from test_megatron_backend_cpu import _args, _backends, _rollout_data

from vime.backends.train_data import TrainBatch


@pytest.fixture(scope="module")
def megatron_cpu():
    yield from megatron_on_cpu()


def _start_adapter(model_dir, dest):
    """A saved adapter with non-zero B (one torch LoRA step), so both backends start from it."""
    first, _ = _backends(_args(model_dir, "--lora-rank", "8", "--lora-alpha", "16"), with_torch=True)
    first.train(0, TrainBatch.from_rollout_data(_rollout_data()))
    return first.export_adapter(dest)


def test_megatron_lora_trains_like_peft(megatron_cpu, tiny_model_dir, tmp_path) -> None:
    from safetensors.torch import load_file

    adapter = _start_adapter(tiny_model_dir, tmp_path / "start")
    args = _args(
        tiny_model_dir,
        "--lora-adapter-path",
        str(adapter),
        "--lora-alpha",
        "16",
        "--save",
        str(tmp_path / "ck"),
    )
    torch_backend, megatron_backend = _backends(args)
    batch = TrainBatch.from_rollout_data(_rollout_data())
    for a, b in zip(
        torch_backend.compute_logprobs(batch), megatron_backend.compute_logprobs(batch), strict=True
    ):
        torch.testing.assert_close(a, b, atol=2e-5, rtol=0)
    torch_metrics = torch_backend.train(0, TrainBatch.from_rollout_data(_rollout_data()))
    megatron_metrics = megatron_backend.train(0, TrainBatch.from_rollout_data(_rollout_data()))
    assert megatron_metrics["pg_loss"] == pytest.approx(torch_metrics["pg_loss"], abs=1e-5)
    for a, b in zip(
        torch_backend.compute_logprobs(batch), megatron_backend.compute_logprobs(batch), strict=True
    ):
        torch.testing.assert_close(a, b, atol=5e-5, rtol=0)
    ours = load_file(str(megatron_backend.export_adapter(tmp_path / "m") / "adapter_model.safetensors"))
    peft = load_file(str(torch_backend.export_adapter(tmp_path / "t") / "adapter_model.safetensors"))
    assert ours.keys() == peft.keys()
    assert max((ours[k] - peft[k]).abs().max().item() for k in ours) < 1e-4
    assert (
        max(
            (ours[k] - load_file(str(adapter / "adapter_model.safetensors"))[k]).abs().max().item()
            for k in ours
        )
        > 1e-4
    )

    megatron_backend.save(0)
    step = tmp_path / "ck" / "iter_0000000"
    assert (step / "adapter" / "adapter_config.json").is_file()
    assert (
        sum(f.stat().st_size for f in step.rglob("*") if f.is_file())
        < 5 * (step / "adapter" / "adapter_model.safetensors").stat().st_size
    )
    _, resumed = _backends(_args(tiny_model_dir, "--lora-adapter-path", str(adapter), "--lora-alpha", "16",
                                 "--load", str(tmp_path / "ck"), "--save", str(tmp_path / "ck2")), with_torch=False)  # fmt: skip
    for a, b in zip(megatron_backend.compute_logprobs(batch), resumed.compute_logprobs(batch), strict=True):
        torch.testing.assert_close(a, b)


def test_megatron_sft_loss_trains_like_torch(megatron_cpu, tiny_model_dir) -> None:
    """``--loss-type sft_loss`` on the Megatron backend: the torch backend's masked NLL, step for step."""
    args = _args(tiny_model_dir, "--loss-type", "sft_loss", "--disable-compute-advantages-and-returns")
    torch_backend, megatron_backend = _backends(args)
    for step in range(2):
        a = torch_backend.train(step, TrainBatch.from_rollout_data(_rollout_data()))
        b = megatron_backend.train(step, TrainBatch.from_rollout_data(_rollout_data()))
        assert b["sft_loss"] == pytest.approx(a["sft_loss"], abs=1e-5) and "pg_loss" not in b
    batch = TrainBatch.from_rollout_data(_rollout_data())
    for x, y in zip(
        torch_backend.compute_logprobs(batch), megatron_backend.compute_logprobs(batch), strict=True
    ):
        torch.testing.assert_close(x, y, atol=5e-5, rtol=0)
