"""Move weights between an HF checkpoint directory and a (tensor/pipeline/expert-sharded) Megatron model.

Loading: every rank reads only the HF tensors its parameters need and keeps its own shard.
Export: every parameter is all-gathered across the tensor-parallel group and converted to HF names;
each pipeline stage yields its own layers (the caller decides which rank of a stage sends). A routed
expert is gathered across the expert-tensor-parallel group, then across the expert-parallel group
(each rank there holds other experts), so the sender yields every expert of its stage.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from vime.backends.megatron_utils.hf_config import ModelShape
from vime.backends.megatron_utils.weight_mapping import (
    Rule,
    Split,
    exported_by,
    rule_for,
    to_hf,
    to_megatron_shard,
)


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The GPTModel inside DDP / Float16Module wrappers."""
    while hasattr(model, "module"):
        model = model.module
    return model


def layer_offset(model: torch.nn.Module) -> int:
    """Global index of this pipeline stage's first layer (Megatron numbers layers from 1)."""
    layers = getattr(unwrap(model).decoder, "layers", None)
    return layers[0].layer_number - 1 if layers is not None and len(layers) else 0


# Megatron keeps the sigmoid router's expert bias as a buffer; the HF checkpoint holds it as a tensor
_WEIGHT_BUFFERS = ("router.expert_bias",)


def named_weights(model: torch.nn.Module) -> list[tuple[str, torch.Tensor]]:
    """The tensors an HF checkpoint holds: every parameter, then the persistent weight buffers."""
    inner = unwrap(model)
    buffers = [(n, b) for n, b in inner.named_buffers() if n.endswith(_WEIGHT_BUFFERS)]
    params = [
        (n, p) for n, p in inner.named_parameters() if ".lora." not in n
    ]  # LoRA adapters: not HF weights
    return params + buffers


def local_experts(model: torch.nn.Module) -> int:
    """Routed experts per expert-parallel rank (0 for a dense model)."""
    for module in unwrap(model).modules():
        if hasattr(module, "num_local_experts") and hasattr(module, "local_experts"):
            return int(module.num_local_experts)
    return 0


@dataclass(frozen=True)
class ShardLayout:
    """This rank's place in the tensor and expert parallel groups (size 1, no group: alone)."""

    tp_rank: int = 0
    tp_size: int = 1
    tp_group: object = None
    etp_rank: int = 0
    etp_size: int = 1
    etp_group: object = None
    ep_rank: int = 0
    ep_size: int = 1
    ep_group: object = None
    local_experts: int = 0

    def split_of(self, rule: Rule) -> tuple[int, int, object]:
        """(rank, size, group) of the group a parameter is split across."""
        if rule.expert:
            return self.etp_rank, self.etp_size, self.etp_group
        return self.tp_rank, self.tp_size, self.tp_group

    def expert_offsets(self, rule: Rule) -> list[int]:
        """First global expert index of every expert-parallel rank whose copy the export yields."""
        if not rule.expert:
            return [0]
        return [r * self.local_experts for r in range(self.ep_size)]


def shard_layout(model: torch.nn.Module) -> ShardLayout:
    """This rank's layout, read from Megatron's parallel state."""
    from megatron.core import parallel_state as ps

    experts = local_experts(model)
    dense = {
        "tp_rank": ps.get_tensor_model_parallel_rank(),
        "tp_size": ps.get_tensor_model_parallel_world_size(),
        "tp_group": ps.get_tensor_model_parallel_group(),
        "local_experts": experts,
    }
    if not experts:
        return ShardLayout(**dense)
    return ShardLayout(
        **dense,
        etp_rank=ps.get_expert_tensor_parallel_rank(),
        etp_size=ps.get_expert_tensor_parallel_world_size(),
        etp_group=ps.get_expert_tensor_parallel_group(),
        ep_rank=ps.get_expert_model_parallel_rank(),
        ep_size=ps.get_expert_model_parallel_world_size(),
        ep_group=ps.get_expert_model_parallel_group(),
    )


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
    """Copy the HF weights into this rank's parameters (and expert-bias buffers); returns how many."""
    layout = shard_layout(model)
    reader = HFCheckpointReader(hf_dir)
    offset = layer_offset(model)
    padded = unwrap(model).vocab_size  # as built: --make-vocab-size-divisible-by decides the padding
    count = 0
    for name, param in named_weights(model):
        rule = rule_for(name, shape, offset, layout.ep_rank * layout.local_experts)
        rank, size, _ = layout.split_of(rule)
        shard = to_megatron_shard(rule, [reader.get(n) for n in rule.hf_names], shape, rank, size, padded)
        if shard.shape != param.shape:
            raise ValueError(
                f"{name}: HF gives shape {tuple(shard.shape)}, the Megatron model has {tuple(param.shape)}"
            )
        param.copy_(shard.to(param.dtype))
        count += 1
    return count


def _gather(data: torch.Tensor, size: int, group) -> list[torch.Tensor]:
    if size == 1:
        return [data]
    out = [torch.empty_like(data) for _ in range(size)]
    torch.distributed.all_gather(out, data.contiguous(), group=group)
    return out


@torch.no_grad()
def iter_hf_tensors(
    model: torch.nn.Module, shape: ModelShape, *, experts_only: bool = False
) -> Iterator[tuple[str, torch.Tensor]]:
    """This pipeline stage's weights as (HF name, full tensor), gathered across tensor parallel and,
    for routed experts, across expert-tensor and expert parallel.

    Every rank of those groups must iterate together (the gathers are collective). A rank that holds
    experts the sender needs but none of the sender's other shards drains ``experts_only``.
    """
    layout = shard_layout(model)
    offset = layer_offset(model)
    for name, param in named_weights(model):
        if not exported_by(name, shape):
            continue
        rule = rule_for(name, shape, offset)
        if experts_only and not rule.expert:
            continue
        _, size, group = layout.split_of(rule)
        shards = _gather(param.detach(), size if rule.split is not Split.REPLICATED else 1, group)
        if not rule.expert or layout.ep_size == 1:
            yield from to_hf(
                rule_for(name, shape, offset, layout.ep_rank * layout.local_experts), shards, shape
            )
            continue
        per_rank = [_gather(s, layout.ep_size, layout.ep_group) for s in shards]  # [etp][ep]
        for r, first in enumerate(layout.expert_offsets(rule)):
            yield from to_hf(rule_for(name, shape, offset, first), [s[r] for s in per_rank], shape)


def write_hf_config(hf_source_dir: str | Path, dest: str | Path) -> None:
    """Copy config / tokenizer / generation files (everything but the weights) next to exported weights."""
    import shutil

    src, dst = Path(hf_source_dir), Path(dest)
    dst.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.is_file() and f.suffix != ".safetensors" and f.name != "model.safetensors.index.json":
            shutil.copy2(f, dst / f.name)


def plan_hf_tensors(
    model: torch.nn.Module, shape: ModelShape
) -> list[tuple[str, torch.dtype, tuple[int, ...]]]:
    """(HF name, dtype, shape) of everything ``iter_hf_tensors`` will yield, in the same order, computed
    on meta tensors: no gather, no copy, no communication."""
    layout = shard_layout(model)
    offset = layer_offset(model)
    specs = []
    for name, param in named_weights(model):
        if not exported_by(name, shape):
            continue
        rule = rule_for(name, shape, offset)
        _, size, _ = layout.split_of(rule)
        meta = torch.empty(param.shape, dtype=param.dtype, device="meta")
        shards = [meta] * (1 if rule.split is Split.REPLICATED else size)
        for first in layout.expert_offsets(rule):
            specs += [
                (n, t.dtype, tuple(t.shape))
                for n, t in to_hf(rule_for(name, shape, offset, first), shards, shape)
            ]
    return specs


def hf_views(model: torch.nn.Module, shape: ModelShape) -> list[tuple[str, torch.Tensor]]:
    """Tensor and expert parallel size 1: every HF tensor as a view of the live parameters (and
    expert-bias buffers), in export order.

    The views stay valid across optimizer steps (the parameters are updated in place), so an exporter
    builds this list once and then only copies: no per-update Python work per tensor beyond one copy.
    """
    layout = shard_layout(model)
    if layout.tp_size != 1 or layout.ep_size != 1 or layout.etp_size != 1:
        raise ValueError("hf_views needs tensor and expert parallel size 1; use iter_hf_tensors (it gathers)")
    offset = layer_offset(model)
    views: list[tuple[str, torch.Tensor]] = []
    for name, param in named_weights(model):
        if exported_by(name, shape):
            views += to_hf(rule_for(name, shape, offset), [param.detach()], shape, flatten=False)
    return views
