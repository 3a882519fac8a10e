"""LoRA on megatron-core's linear layers (on the CPU) against PEFT on the HF model with the same adapter.

The Megatron adapters keep PEFT's layout (one A and B per q/k/v/o/gate/up/down), packed into the fused
layers' output; loading a PEFT adapter gives the HF+PEFT model's logits, training moves only the
adapters, and the exported adapter is PEFT's again.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("megatron.core")

from megatron_cpu_support import megatron_on_cpu
from test_megatron_cpu_parity import _hf_model, _logits, _megatron

from vime.utils.lora_settings import LoraSettings


@pytest.fixture(scope="module")
def megatron_cpu():
    yield from megatron_on_cpu()


def _peft_adapter(hf_dir, dest, settings: LoraSettings):
    """An HF model with a PEFT adapter whose B are random (a fresh adapter changes nothing)."""
    from transformers import AutoModelForCausalLM

    from vime.backends.torch_utils.lora import apply_lora, save_adapter

    model = apply_lora(AutoModelForCausalLM.from_pretrained(str(hf_dir), dtype=torch.float32), settings)
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.2)
    return model.eval(), save_adapter(model, dest)


@pytest.mark.parametrize("targets", ["all-linear", "q_proj,v_proj,down_proj"])
def test_megatron_lora_matches_peft(megatron_cpu, tmp_path, targets: str) -> None:
    from vime.backends.megatron_utils.lora import (
        adapter_state,
        apply_lora,
        load_adapter_state,
        read_adapter_dir,
    )
    from vime.utils.lora_settings import parse_modules

    hf_dir = _hf_model(tmp_path / "m", "qwen2", False)
    settings = LoraSettings(rank=4, alpha=8, target_modules=parse_modules(targets))
    peft_model, adapter_dir = _peft_adapter(hf_dir, tmp_path / "adapter", settings)
    model, shape = _megatron(hf_dir)
    ids = torch.randint(0, shape.vocab_size, (2, 19), generator=torch.Generator().manual_seed(1))
    base_logits = _logits(model, ids)
    apply_lora(model, settings, shape)
    fresh = _logits(model, ids)
    assert torch.equal(fresh, base_logits)  # B starts at zero: a fresh adapter changes nothing
    state = read_adapter_dir(adapter_dir)
    assert load_adapter_state(model, state) == len(state)
    ours = _logits(model, ids)[..., : shape.vocab_size]
    with torch.no_grad():
        ref = peft_model(input_ids=ids).logits
    assert (ours - ref).abs().max().item() < 1e-4
    assert (ours - base_logits[..., : shape.vocab_size]).abs().max().item() > 1e-2  # the adapter matters
    exported = adapter_state(model)
    assert exported.keys() == state.keys() and all(torch.equal(exported[k], state[k]) for k in state)


def test_only_adapters_train_and_the_base_stays_bit_for_bit(megatron_cpu, tmp_path) -> None:
    from vime.backends.megatron_utils.lora import apply_lora, lora_parameters

    hf_dir = _hf_model(tmp_path / "t", "qwen3", True)
    model, shape = _megatron(hf_dir)
    base = {n: p.detach().clone() for n, p in model.named_parameters()}
    apply_lora(model, LoraSettings(rank=4, alpha=8, dropout=0.1), shape)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all(".lora_A." in n or ".lora_B." in n for n in trainable)
    optimizer = torch.optim.AdamW(lora_parameters(model), lr=1e-2)
    ids = torch.randint(0, shape.vocab_size, (2, 11))
    model.train()
    for _ in range(3):
        loss = _logits_with_grad(model, ids).float().logsumexp(-1).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    after = {n: p for n, p in model.named_parameters() if not p.requires_grad}
    assert after.keys() == base.keys()
    assert all(torch.equal(after[n], base[n]) for n in base)
    assert any(p.abs().sum() > 0 for n, p in model.named_parameters() if ".lora_B." in n)


def _logits_with_grad(model, ids):
    pos = torch.arange(ids.shape[1]).expand_as(ids)
    return model(input_ids=ids, position_ids=pos, attention_mask=None)


def test_base_weights_still_export_as_the_hf_checkpoint(megatron_cpu, tmp_path) -> None:
    """The adapters hang beside the layers: the base keeps its names, and the exporter sends exactly it."""
    from safetensors.torch import load_file

    from vime.backends.megatron_utils.hf_io import iter_hf_tensors
    from vime.backends.megatron_utils.lora import apply_lora

    hf_dir = _hf_model(tmp_path / "e", "qwen2", False)
    model, shape = _megatron(hf_dir)
    names = {n for n, _ in model.named_parameters()}
    apply_lora(model, LoraSettings(rank=4, alpha=8), shape)
    assert {n for n, _ in model.named_parameters() if ".lora." not in n} == names
    ref = load_file(str(hf_dir / "model.safetensors"))
    got = dict(iter_hf_tensors(model, shape))
    assert got.keys() == ref.keys() and all(torch.equal(got[k], ref[k]) for k in ref)
