"""Move weights between an HF checkpoint directory and a (tensor/pipeline-sharded) Megatron model.

Loading: every rank reads only the HF tensors its parameters need and keeps its own shard.
Export: every parameter is all-gathered across the tensor-parallel group and converted to HF names;
each pipeline stage yields its own layers (the caller decides which rank of a stage sends).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import torch

from vime.backends.megatron_utils.hf_config import ModelShape, padded_vocab_size
from vime.backends.megatron_utils.weight_mapping import exported_by, rule_for, to_hf, to_megatron_shard


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The GPTModel inside DDP / Float16Module wrappers."""
    while hasattr(model, "module"):
        model = model.module
    return model


def layer_offset(model: torch.nn.Module) -> int:
    """Global index of this pipeline stage's first layer (Megatron numbers layers from 1)."""
    layers = getattr(unwrap(model).decoder, "layers", None)
    return layers[0].layer_number - 1 if layers is not None and len(layers) else 0


class HFCheckpointReader:
    """Lazy reader over the safetensors files of an HF checkpoint directory."""

    def __init__(self, hf_dir: str | Path):
        from safetensors import safe_open

        self.dir = Path(hf_dir)
        files = sorted(self.dir.glob("*.safetensors"))
        if not files:
            raise FileNotFoundError(
                f"no *.safetensors in {self.dir}; point --hf-checkpoint at an HF model directory"
            )
        self._handles = [safe_open(str(f), framework="pt") for f in files]
        self._where = {name: h for h in self._handles for name in h.keys()}  # noqa: SIM118 - safe_open is not a dict

    def get(self, name: str) -> torch.Tensor:
        if name not in self._where:
            raise KeyError(f"{name} is missing from the HF checkpoint in {self.dir}")
        return self._where[name].get_tensor(name)


@torch.no_grad()
def load_hf_into_megatron(model: torch.nn.Module, hf_dir: str | Path, shape: ModelShape) -> int:
    """Copy the HF weights into this rank's parameters; returns how many parameters were set."""
    from megatron.core import parallel_state

    tp_rank = parallel_state.get_tensor_model_parallel_rank()
    tp_size = parallel_state.get_tensor_model_parallel_world_size()
    reader = HFCheckpointReader(hf_dir)
    offset = layer_offset(model)
    padded = padded_vocab_size(shape.vocab_size, tp_size)
    count = 0
    for name, param in unwrap(model).named_parameters():
        rule = rule_for(name, shape, offset)
        shard = to_megatron_shard(
            rule, [reader.get(n) for n in rule.hf_names], shape, tp_rank, tp_size, padded
        )
        if shard.shape != param.shape:
            raise ValueError(
                f"{name}: HF gives shape {tuple(shard.shape)}, the Megatron model has {tuple(param.shape)}"
            )
        param.copy_(shard.to(param.dtype))
        count += 1
    return count


@torch.no_grad()
def iter_hf_tensors(model: torch.nn.Module, shape: ModelShape) -> Iterator[tuple[str, torch.Tensor]]:
    """This pipeline stage's weights as (HF name, full tensor), gathered across tensor parallel.

    Every rank of the tensor-parallel group must iterate together (the gathers are collective).
    """
    from megatron.core import parallel_state

    tp_size = parallel_state.get_tensor_model_parallel_world_size()
    group = parallel_state.get_tensor_model_parallel_group()
    offset = layer_offset(model)
    for name, param in unwrap(model).named_parameters():
        if not exported_by(name, shape):
            continue
        rule = rule_for(name, shape, offset)
        data = param.detach()
        if tp_size > 1 and rule.split.value != "replicated":
            shards = [torch.empty_like(data) for _ in range(tp_size)]
            torch.distributed.all_gather(shards, data.contiguous(), group=group)
        else:
            shards = [data]
        yield from to_hf(rule, shards, shape)


def write_hf_config(hf_source_dir: str | Path, dest: str | Path) -> None:
    """Copy config / tokenizer / generation files (everything but the weights) next to exported weights."""
    import shutil

    src, dst = Path(hf_source_dir), Path(dest)
    dst.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.is_file() and f.suffix != ".safetensors" and f.name != "model.safetensors.index.json":
            shutil.copy2(f, dst / f.name)


def write_safetensors_index(dest: str | Path, weight_map: dict[str, str], total_bytes: int) -> None:
    """The index file HF loaders use to find each tensor among several safetensors files."""
    index = {"metadata": {"total_size": total_bytes}, "weight_map": dict(sorted(weight_map.items()))}
    (Path(dest) / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")


def plan_hf_tensors(
    model: torch.nn.Module, shape: ModelShape
) -> list[tuple[str, torch.dtype, tuple[int, ...]]]:
    """(HF name, dtype, shape) of everything ``iter_hf_tensors`` will yield, in the same order, computed
    on meta tensors: no gather, no copy, no communication."""
    from megatron.core import parallel_state

    tp_size = parallel_state.get_tensor_model_parallel_world_size()
    offset = layer_offset(model)
    specs = []
    for name, param in unwrap(model).named_parameters():
        if not exported_by(name, shape):
            continue
        rule = rule_for(name, shape, offset)
        meta = torch.empty(param.shape, dtype=param.dtype, device="meta")
        shards = [meta] * (1 if rule.split.value == "replicated" else tp_size)
        specs += [(n, t.dtype, tuple(t.shape)) for n, t in to_hf(rule, shards, shape)]
    return specs


def hf_views(model: torch.nn.Module, shape: ModelShape) -> list[tuple[str, torch.Tensor]]:
    """Tensor-parallel size 1: every HF tensor as a view of the live parameters, in export order.

    The views stay valid across optimizer steps (the parameters are updated in place), so an exporter
    builds this list once and then only copies: no per-update Python work per tensor beyond one copy.
    """
    from megatron.core import parallel_state

    if parallel_state.get_tensor_model_parallel_world_size() != 1:
        raise ValueError("hf_views needs tensor parallel size 1; use iter_hf_tensors (it gathers)")
    offset = layer_offset(model)
    views: list[tuple[str, torch.Tensor]] = []
    for name, param in unwrap(model).named_parameters():
        if exported_by(name, shape):
            views += to_hf(rule_for(name, shape, offset), [param.detach()], shape, flatten=False)
    return views
