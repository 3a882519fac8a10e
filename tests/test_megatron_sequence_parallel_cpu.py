"""Sequence parallelism at tensor parallel 2 on the CPU: two gloo processes, a real Qwen3-shaped model.

slime's recipes pass ``--sequence-parallel`` with tensor parallel 2 to 8. vime's Megatron layers use
torch norms (no Transformer Engine); :mod:`vime.backends.megatron_utils.norms` makes them sequence-
parallel. With it on, the logits, the loss and every gradient after megatron-core's finalisation
must equal those of the same run without it: a norm whose gradient were not summed over the
tensor-parallel group would differ (each rank sees half of the tokens).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.gloo_ranks import run_two_ranks

pytest.importorskip("megatron.core")


def hf_dense_model(dest: Path) -> None:
    """A random Qwen3 (q/k norms, grouped-query attention with 2 KV heads: splittable by 2)."""
    import transformers

    config = transformers.Qwen3Config(
        vocab_size=384, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=128, tie_word_embeddings=False,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.Qwen3ForCausalLM(config)
    with torch.no_grad():  # norms away from 1, so that a wrong norm gradient shows
        for name, param in model.named_parameters():
            if "norm" in name:
                param.uniform_(0.5, 1.5)
    model.save_pretrained(dest, safe_serialization=True)


def _run(hf: Path, out: Path, sp: bool, lora: bool = False) -> list[dict]:
    worker = Path(__file__).with_name("sequence_parallel_worker.py")
    run_two_ranks(worker, str(hf), str(out), "1" if sp else "0", "1" if lora else "0")
    return [torch.load(out / f"sp{int(sp)}_lora{int(lora)}_rank{r}.pt") for r in range(2)]


def test_sequence_parallel_equals_tensor_parallel_alone(tmp_path) -> None:
    hf_dense_model(tmp_path / "hf")
    plain = _run(tmp_path / "hf", tmp_path, sp=False)
    split = _run(tmp_path / "hf", tmp_path, sp=True)
    for rank in range(2):
        ref, got = plain[rank], split[rank]
        assert ref["marked"] == []
        # every norm of the layers and the final norm is marked for the tensor-parallel sum
        assert any("input_layernorm" in n for n in got["marked"]) and any(
            "final_layernorm" in n for n in got["marked"]
        ), got["marked"]
        torch.testing.assert_close(got["logits"], ref["logits"], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(got["loss"], ref["loss"], atol=1e-4, rtol=1e-5)
        assert set(got["grads"]) == set(ref["grads"])
        for name, grad in ref["grads"].items():
            torch.testing.assert_close(got["grads"][name], grad, atol=1e-5, rtol=1e-4, msg=name)


def test_lora_adapters_under_sequence_parallel_equal_tensor_parallel_alone(tmp_path) -> None:
    """The adapters' path gathers (column layers) or reduce-scatters (row layers) along the sequence as
    the layer itself does, and the adapter matrix that met only this rank's tokens is summed over tensor
    parallel: logits and every adapter gradient equal those without sequence parallelism."""
    hf_dense_model(tmp_path / "hf")
    plain = _run(tmp_path / "hf", tmp_path, sp=False, lora=True)
    split = _run(tmp_path / "hf", tmp_path, sp=True, lora=True)
    for rank in range(2):
        ref, got = plain[rank], split[rank]
        assert ref["grads"] and all(".lora." in n for n in ref["grads"])  # only the adapters train
        assert any("lora_A" in n for n in got["marked"]) and any("lora_B" in n for n in got["marked"])
        torch.testing.assert_close(got["logits"], ref["logits"], atol=1e-5, rtol=1e-5)
        assert set(got["grads"]) == set(ref["grads"])
        for name, grad in ref["grads"].items():
            torch.testing.assert_close(got["grads"][name], grad, atol=1e-5, rtol=1e-4, msg=name)
