"""Full (unsharded) state dicts and the Hugging Face dirs the rollout engines reload from."""

from __future__ import annotations

import shutil
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

from vime.backends.torch_utils.model import unwrap


def full_model_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter and buffer, gathered onto rank 0's CPU (other ranks get ``{}``)."""
    if dist.is_initialized() and dist.get_world_size() > 1:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    return {k: v.detach().cpu() for k, v in unwrap(model).state_dict().items()}


def write_hf_dir(
    model: nn.Module, state: dict[str, torch.Tensor], dest: Path, source_dir: str | None
) -> Path:
    """Write ``state`` as a Hugging Face model dir (safetensors, config, tokenizer files copied)."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # one bar per weight push would flood the run's log
    dest = Path(dest)
    tmp = dest.with_name(dest.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    unwrap(model).save_pretrained(str(tmp), state_dict=state, safe_serialization=True)
    if source_dir is not None:
        for name in Path(source_dir).iterdir():
            if (
                name.is_file()
                and not name.name.endswith((".safetensors", ".bin"))
                and not (tmp / name.name).exists()
            ):
                shutil.copy2(name, tmp / name.name)
    if dest.exists():
        shutil.rmtree(dest)  # a weight-sync staging dir of ours, not a checkpoint
    tmp.rename(dest)
    return dest
