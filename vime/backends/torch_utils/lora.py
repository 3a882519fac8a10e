"""LoRA on the torch backend through PEFT: adapters on the chosen linear layers, base weights frozen.

What leaves the trainer is either the adapter alone (a PEFT directory: ``adapter_config.json`` +
``adapter_model.safetensors``, what vLLM's LoRA support loads and what checkpoints hold) or the
merged weights ``W + alpha/r * B A`` under the plain Hugging Face names (engines that cannot take
adapters, ``--save-hf``), computed without touching the model's own base weights.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch
from torch import nn

from vime.utils.lora_settings import LoraSettings

ADAPTER_WEIGHTS = "adapter_model.safetensors"


def apply_lora(model: nn.Module, settings: LoraSettings) -> nn.Module:
    """Wrap ``model`` with trainable adapters (fresh, or loaded from ``--lora-adapter-path``)."""
    from peft import LoraConfig, PeftModel, get_peft_model

    if settings.adapter_path:
        return PeftModel.from_pretrained(model, settings.adapter_path, is_trainable=True)
    config = LoraConfig(
        r=settings.rank,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        target_modules=list(settings.target_modules),
        bias="none",
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)


def adapter_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The adapter's tensors alone, under PEFT's saved names (CPU copies)."""
    from peft import get_peft_model_state_dict

    return {k: v.detach().cpu().contiguous() for k, v in get_peft_model_state_dict(model).items()}


def save_adapter(model: nn.Module, dest: Path, state: dict[str, torch.Tensor] | None = None) -> Path:
    """Write the adapter as a PEFT directory at ``dest`` (written beside, then moved in)."""
    dest = Path(dest)
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save_pretrained(str(tmp), state_dict=state if state is not None else adapter_state(model))
    (tmp / "README.md").unlink(missing_ok=True)  # PEFT's model card: not needed to load, sent every step
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)
    return dest


def load_adapter_weights(model: nn.Module, folder: Path) -> None:
    """Put a saved adapter's tensors back into the (already wrapped) model."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    result = set_peft_model_state_dict(model, load_file(str(Path(folder) / ADAPTER_WEIGHTS)))
    if getattr(result, "unexpected_keys", None):
        raise ValueError(f"adapter in {folder} has tensors this model lacks: {result.unexpected_keys[:3]}")


def _hf_name(name: str) -> str:
    return name.replace("base_model.model.", "", 1).replace(".base_layer.", ".")


@torch.no_grad()
def merged_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every base weight under its Hugging Face name, with each adapter's ``scale * B A`` added (copies)."""
    from peft.tuners.lora import LoraLayer

    deltas: dict[str, torch.Tensor] = {}
    for name, module in model.named_modules():
        if isinstance(module, LoraLayer) and module.active_adapters:
            delta = sum(module.get_delta_weight(a) for a in module.active_adapters if a in module.lora_A)
            deltas[_hf_name(name) + ".weight"] = delta
    out: dict[str, torch.Tensor] = {}
    for name, tensor in model.state_dict().items():
        if "lora_" in name:
            continue
        hf = _hf_name(name)
        value = tensor.detach()
        out[hf] = (value + deltas[hf].to(value.dtype)) if hf in deltas else value.clone()
    return out


def base_model(model: nn.Module) -> nn.Module:
    """The Hugging Face model under the PEFT wrapper (its config, save_pretrained)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model
