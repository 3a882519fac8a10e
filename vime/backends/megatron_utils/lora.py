"""LoRA on the linear layers megatron-core builds, one adapter per Hugging Face module (PEFT's layout).

Megatron fuses q/k/v into ``linear_qkv`` (interleaved per query group) and gate/up into
``linear_fc1``; PEFT trains separate ``q_proj``/``k_proj``/``v_proj``/``gate_proj``/``up_proj``
adapters. To stay exchangeable with PEFT both ways (``--lora-adapter-path``, what the engines load),
every HF module keeps its own ``A`` and ``B`` and their outputs are placed in the fused layout:
``delta = scale * B (A dropout(x))`` per part, packed as Megatron packs the base weights. The adapters
hang under each layer as ``.lora`` (a forward hook adds their output), so the base weights keep their
names and paths: the exporter and checkpoints skip ``.lora.``.

Tensor parallelism: on a column-parallel layer (``linear_qkv``, ``linear_fc1``) ``A`` is whole on
every rank and ``B`` holds this rank's rows; the gradient of ``A x`` is summed over the group
(``copy_to_tensor_model_parallel_region``). On a row-parallel layer (``linear_proj``, ``linear_fc2``)
``A`` holds this rank's input columns, ``A x`` is summed over the group
(``reduce_from_tensor_model_parallel_region``) and ``B`` is whole. Initial adapters are drawn from
one generator per module whatever the split, so any tensor-parallel size starts from the same
adapters. Only the adapters train; every base parameter is frozen.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from vime.backends.megatron_utils.hf_config import ModelShape
from vime.utils.lora_settings import LoraSettings

# Megatron module -> (its HF parts in output order, column or row parallel)
FUSED = {
    "self_attention.linear_qkv": (("q_proj", "k_proj", "v_proj"), "column"),
    "self_attention.linear_proj": (("o_proj",), "row"),
    "mlp.linear_fc1": (("gate_proj", "up_proj"), "column"),
    "mlp.linear_fc2": (("down_proj",), "row"),
}
HF_PREFIX = {"q_proj": "self_attn", "k_proj": "self_attn", "v_proj": "self_attn", "o_proj": "self_attn",
             "gate_proj": "mlp", "up_proj": "mlp", "down_proj": "mlp"}  # fmt: skip


def _tp() -> tuple[int, int]:
    from megatron.core import parallel_state

    if not parallel_state.model_parallel_is_initialized():
        return 0, 1
    return (
        parallel_state.get_tensor_model_parallel_rank(),
        parallel_state.get_tensor_model_parallel_world_size(),
    )


@dataclass(frozen=True)
class PartShape:
    """One HF module inside a fused Megatron layer: its full in/out sizes."""

    name: str
    in_features: int
    out_features: int


def part_shapes(shape: ModelShape, module: str) -> list[PartShape]:
    h, f, hd = shape.hidden_size, shape.ffn_hidden_size, shape.head_dim
    q, kv = shape.num_attention_heads * hd, shape.num_query_groups * hd
    return {
        "self_attention.linear_qkv": [PartShape("q_proj", h, q), PartShape("k_proj", h, kv), PartShape("v_proj", h, kv)],
        "self_attention.linear_proj": [PartShape("o_proj", q, h)],
        "mlp.linear_fc1": [PartShape("gate_proj", h, f), PartShape("up_proj", h, f)],
        "mlp.linear_fc2": [PartShape("down_proj", f, h)],
    }[module]  # fmt: skip


def initial_adapter(
    key: str, rank: int, in_features: int, out_features: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """PEFT's initialisation (A: Kaiming-uniform, a=sqrt(5); B: zeros), from a generator seeded by ``key``."""
    seed = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little")
    generator = torch.Generator().manual_seed(seed)
    bound = 1.0 / math.sqrt(in_features)  # kaiming_uniform_(a=sqrt(5)) on a [rank, in] matrix
    a = (torch.rand(rank, in_features, generator=generator) * 2 - 1) * bound
    return a, torch.zeros(out_features, rank)


class LoraAdapters(nn.Module):
    """The adapters of one Megatron linear layer, attached to it as ``<layer>.lora`` with a forward hook
    that adds their output: the layer and its parameter names stay as Megatron built them, so loading,
    export and checkpoints of the base weights work unchanged (they skip ``.lora.``)."""

    def __init__(self, base: nn.Module, parts: list[PartShape], split: str, settings: LoraSettings,
                 shape: ModelShape, layer: int) -> None:  # fmt: skip
        super().__init__()
        self.split = split
        # under sequence parallelism the layer's input (column) or output (row) is this rank's share of
        # the sequence: the adapter path gathers / reduce-scatters along it as Megatron's layer does
        self.sequence_parallel = bool(base.config.sequence_parallel)
        self.scale = settings.scale
        self.shape = shape
        self.parts = list(parts)
        self.trained = [p.name in settings.target_modules for p in parts]
        self.dropout = nn.Dropout(settings.dropout) if settings.dropout else nn.Identity()
        tp_rank, tp_size = _tp()
        self.lora_A = nn.ParameterDict()
        self.lora_B = nn.ParameterDict()
        weight = next(base.parameters())
        for part, trained in zip(parts, self.trained, strict=True):
            if not trained:
                continue
            a, b = initial_adapter(
                f"layer{layer}.{part.name}", settings.rank, part.in_features, part.out_features
            )
            if split == "column":
                b = b.chunk(tp_size, dim=0)[tp_rank]
            else:
                a = a.chunk(tp_size, dim=1)[tp_rank]
            self.lora_A[part.name] = nn.Parameter(a.to(device=weight.device, dtype=weight.dtype).contiguous())
            self.lora_B[part.name] = nn.Parameter(b.to(device=weight.device, dtype=weight.dtype).contiguous())
            if self.sequence_parallel:  # the whole matrix met only this rank's tokens: sum over TP
                whole = self.lora_A[part.name] if split == "column" else self.lora_B[part.name]
                whole.sequence_parallel = True

    def _local_out(self, part: PartShape) -> int:
        return part.out_features // _tp()[1]

    def forward(self, x: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        """``scale * B (A dropout(x))`` of every part, in the layer's (local) output layout."""
        from megatron.core.tensor_parallel.mappings import (
            copy_to_tensor_model_parallel_region,
            gather_from_sequence_parallel_region,
            reduce_from_tensor_model_parallel_region,
            reduce_scatter_to_sequence_parallel_region,
        )

        dropped = self.dropout(x)
        deltas = []
        for part, trained in zip(self.parts, self.trained, strict=True):
            if not trained:
                deltas.append(None)
                continue
            h = dropped @ self.lora_A[part.name].t()
            if self.split == "column":
                h = (
                    gather_from_sequence_parallel_region(h)
                    if self.sequence_parallel
                    else copy_to_tensor_model_parallel_region(h)
                )
            else:
                h = (
                    reduce_scatter_to_sequence_parallel_region(h)
                    if self.sequence_parallel
                    else reduce_from_tensor_model_parallel_region(h)
                )
            deltas.append((h @ self.lora_B[part.name].t()) * self.scale)
        return self._pack(deltas, like).to(like.dtype)

    def _pack(self, deltas: list[torch.Tensor | None], like: torch.Tensor) -> torch.Tensor:
        """Per-part outputs in the fused layer's local output layout (missing parts are zero)."""
        lead = like.shape[:-1]
        full = [
            d if d is not None else like.new_zeros(*lead, self._local_out(p))
            for d, p in zip(deltas, self.parts, strict=True)
        ]
        if len(full) == 1:
            return full[0]
        if len(full) == 2:  # linear_fc1: [gate; up] of this rank
            return torch.cat(full, dim=-1)
        groups = self.shape.num_query_groups // _tp()[1]  # linear_qkv: per local query group q, k, v
        q, k, v = (t.reshape(*lead, groups, -1) for t in full)
        return torch.cat([q, k, v], dim=-1).reshape(*lead, -1)


def _add_adapter_output(module: nn.Module, args: tuple, output):
    """Forward hook of an adapted layer: Megatron's linear layers return ``(output, bias)``."""
    out, bias = output
    return out + module.lora(args[0], out), bias


def apply_lora(model: nn.Module, settings: LoraSettings, shape: ModelShape) -> list[str]:
    """Attach adapters to every targeted linear layer of ``model`` (one pipeline stage) and freeze the
    rest; returns the adapted module names."""
    from vime.backends.megatron_utils.hf_io import layer_offset, unwrap

    inner = unwrap(model)
    offset = layer_offset(model)
    for param in inner.parameters():
        param.requires_grad_(False)
    wrapped = []
    for local, layer in enumerate(inner.decoder.layers):
        for module, (hf_parts, split) in FUSED.items():
            if not set(hf_parts) & set(settings.target_modules):
                continue
            base = layer.get_submodule(module)
            base.lora = LoraAdapters(base, part_shapes(shape, module), split, settings, shape, offset + local)
            base.register_forward_hook(_add_adapter_output)
            wrapped.append(f"decoder.layers.{local}.{module}")
    return wrapped


def _adapters(layer: nn.Module, module: str) -> LoraAdapters | None:
    lora = getattr(layer.get_submodule(module), "lora", None)
    return lora if isinstance(lora, LoraAdapters) else None


def lora_parameters(model: nn.Module) -> list[nn.Parameter]:
    return [p for n, p in model.named_parameters() if ".lora_A." in n or ".lora_B." in n]


def _peft_name(layer: int, part: str, matrix: str) -> str:
    return f"base_model.model.model.layers.{layer}.{HF_PREFIX[part]}.{part}.{matrix}.weight"


def _gather(tensor: torch.Tensor, dim: int) -> torch.Tensor:
    """The whole tensor from every tensor-parallel rank's shard along ``dim``."""
    from megatron.core import parallel_state

    _, size = _tp()
    if size == 1:
        return tensor
    shards = [torch.empty_like(tensor) for _ in range(size)]
    torch.distributed.all_gather(
        shards, tensor.contiguous(), group=parallel_state.get_tensor_model_parallel_group()
    )
    return torch.cat(shards, dim=dim)


def adapter_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """This stage's adapters under PEFT's names (whole tensors: shards gathered over tensor parallel)."""
    from vime.backends.megatron_utils.hf_io import layer_offset, unwrap

    inner, offset, out = unwrap(model), layer_offset(model), {}
    for local, layer in enumerate(inner.decoder.layers):
        for module in FUSED:
            lora = _adapters(layer, module)
            if lora is None:
                continue
            for part in lora.lora_A:
                a, b = lora.lora_A[part].detach(), lora.lora_B[part].detach()
                a, b = (a, _gather(b, 0)) if lora.split == "column" else (_gather(a, 1), b)
                out[_peft_name(offset + local, part, "lora_A")] = a.float().cpu().contiguous()
                out[_peft_name(offset + local, part, "lora_B")] = b.float().cpu().contiguous()
    return out


@torch.no_grad()
def load_adapter_state(model: nn.Module, state: dict[str, torch.Tensor]) -> int:
    """Put PEFT-named adapter tensors into the wrapped model (this rank's shards); returns tensors set."""
    from vime.backends.megatron_utils.hf_io import layer_offset, unwrap

    inner, offset = unwrap(model), layer_offset(model)
    tp_rank, tp_size = _tp()
    loaded = 0
    for local, layer in enumerate(inner.decoder.layers):
        for module in FUSED:
            lora = _adapters(layer, module)
            if lora is None:
                continue
            for part in lora.lora_A:
                a = state[_peft_name(offset + local, part, "lora_A")]
                b = state[_peft_name(offset + local, part, "lora_B")]
                if lora.split == "column":
                    b = b.chunk(tp_size, dim=0)[tp_rank]
                else:
                    a = a.chunk(tp_size, dim=1)[tp_rank]
                lora.lora_A[part].copy_(a)
                lora.lora_B[part].copy_(b)
                loaded += 2
    return loaded


def peft_config(settings: LoraSettings, base_model: str | None) -> dict:
    """``adapter_config.json`` as PEFT writes it for these adapters (what vLLM reads)."""
    return {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "r": settings.rank,
        "lora_alpha": settings.alpha,
        "lora_dropout": settings.dropout,
        "target_modules": list(settings.target_modules),
        "bias": "none",
        "base_model_name_or_path": base_model,
        "fan_in_fan_out": False,
        "use_rslora": False,
        "use_dora": False,
    }


def save_adapter_dir(
    state: dict[str, torch.Tensor], settings: LoraSettings, dest: Path, base_model: str | None
) -> Path:
    """A PEFT adapter directory (``adapter_config.json`` + ``adapter_model.safetensors``), written beside, moved in."""
    import shutil

    from safetensors.torch import save_file

    dest = Path(dest)
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_file(state, str(tmp / "adapter_model.safetensors"), metadata={"format": "pt"})
    (tmp / "adapter_config.json").write_text(json.dumps(peft_config(settings, base_model), indent=2))
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)
    return dest


def read_adapter_dir(path: str | Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(Path(path) / "adapter_model.safetensors"))
