"""HF <-> Megatron parameter mapping for Qwen2 / Qwen3 / Llama / Qwen3-MoE / GLM-4.x-MoE, per shard.

Each Megatron parameter has a ``Rule``: which HF tensors it is made of and how it is split across
tensor-parallel ranks. A routed expert's rule is marked ``expert``: it lives on one expert-parallel
rank (local expert ``e`` of rank ``r`` is HF expert ``r * local_experts + e``) and is split across
the expert-tensor-parallel group instead of the tensor-parallel one. ``to_megatron_shard`` builds one rank's shard from HF tensors (loading);
``to_hf`` rebuilds the HF tensors from all ranks' shards (export), dropping vocabulary padding.
Both are pure tensor functions, so the round trip is tested without any process group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

import torch

from vime.backends.megatron_utils.hf_config import ModelShape


class Split(Enum):
    REPLICATED = "replicated"  # norms: every rank holds the whole tensor
    COLUMN = "column"  # split along dim 0
    ROW = "row"  # split along dim 1
    VOCAB = "vocab"  # split along dim 0 after padding the vocabulary
    QKV = "qkv"  # q, k, v interleaved per query group, groups split along dim 0
    GATE_UP = "gate_up"  # [gate; up] per rank


@dataclass(frozen=True)
class Rule:
    hf_names: tuple[str, ...]
    split: Split
    expert: bool = False  # a routed expert: sharded by expert parallel, split by expert tensor parallel


_LAYER = re.compile(r"^decoder\.layers\.(\d+)\.(.+)$")
_LAYER_SUFFIX = {
    "input_layernorm.weight": (("input_layernorm.weight",), Split.REPLICATED),
    "self_attention.linear_qkv.weight": (
        ("self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight"),
        Split.QKV,
    ),
    "self_attention.linear_qkv.bias": (
        ("self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias"),
        Split.QKV,
    ),
    "self_attention.q_layernorm.weight": (("self_attn.q_norm.weight",), Split.REPLICATED),
    "self_attention.k_layernorm.weight": (("self_attn.k_norm.weight",), Split.REPLICATED),
    "self_attention.linear_proj.weight": (("self_attn.o_proj.weight",), Split.ROW),
    "pre_mlp_layernorm.weight": (("post_attention_layernorm.weight",), Split.REPLICATED),
    "mlp.linear_fc1.weight": (("mlp.gate_proj.weight", "mlp.up_proj.weight"), Split.GATE_UP),
    "mlp.linear_fc2.weight": (("mlp.down_proj.weight",), Split.ROW),
    # mixture-of-experts layers (Megatron's local spec: a router, SequentialMLP experts, shared experts)
    "mlp.router.weight": (("mlp.gate.weight",), Split.REPLICATED),
    "mlp.router.expert_bias": (("mlp.gate.e_score_correction_bias",), Split.REPLICATED),
    "mlp.shared_experts.linear_fc1.weight": (
        ("mlp.shared_experts.gate_proj.weight", "mlp.shared_experts.up_proj.weight"),
        Split.GATE_UP,
    ),
    "mlp.shared_experts.linear_fc2.weight": (("mlp.shared_experts.down_proj.weight",), Split.ROW),
}
_EXPERT = re.compile(r"^mlp\.experts\.local_experts\.(\d+)\.(linear_fc1|linear_fc2)\.weight$")
_EXPERT_HF = {
    "linear_fc1": (("gate_proj.weight", "up_proj.weight"), Split.GATE_UP),
    "linear_fc2": (("down_proj.weight",), Split.ROW),
}


def rule_for(name: str, shape: ModelShape, layer_offset: int = 0, expert_offset: int = 0) -> Rule:
    """The rule for a Megatron parameter name; ``layer_offset`` turns stage-local layer numbers global,
    ``expert_offset`` local expert numbers (this expert-parallel rank's first expert)."""
    if name == "embedding.word_embeddings.weight":
        return Rule(("model.embed_tokens.weight",), Split.VOCAB)
    if name == "output_layer.weight":
        hf = "model.embed_tokens.weight" if shape.tie_word_embeddings else "lm_head.weight"
        return Rule((hf,), Split.VOCAB)
    if name == "decoder.final_layernorm.weight":
        return Rule(("model.norm.weight",), Split.REPLICATED)
    match = _LAYER.match(name)
    if match and match.group(2) in _LAYER_SUFFIX:
        layer = int(match.group(1)) + layer_offset
        suffixes, split = _LAYER_SUFFIX[match.group(2)]
        return Rule(tuple(f"model.layers.{layer}.{s}" for s in suffixes), split)
    expert = _EXPERT.match(match.group(2)) if match else None
    if expert:
        layer, index = int(match.group(1)) + layer_offset, int(expert.group(1)) + expert_offset
        suffixes, split = _EXPERT_HF[expert.group(2)]
        prefix = f"model.layers.{layer}.mlp.experts.{index}"
        return Rule(tuple(f"{prefix}.{s}" for s in suffixes), split, expert=True)
    raise KeyError(
        f"no HF mapping for Megatron parameter {name!r}; the model family {shape.family} may need a rule"
    )


def exported_by(name: str, shape: ModelShape) -> bool:
    """A tied output layer is the embedding again: export it once, as the embedding."""
    return not (name == "output_layer.weight" and shape.tie_word_embeddings)


def _qkv_pack(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, shape: ModelShape) -> torch.Tensor:
    """HF q/k/v -> Megatron's layout: per query group, that group's q heads then its k then its v."""
    groups, hd = shape.num_query_groups, shape.head_dim
    per_group = shape.num_attention_heads // groups
    tail = q.shape[1:]
    q = q.reshape(groups, per_group * hd, *tail)
    k = k.reshape(groups, hd, *tail)
    v = v.reshape(groups, hd, *tail)
    return torch.cat([q, k, v], dim=1).reshape(-1, *tail)


def _qkv_unpack(qkv: torch.Tensor, shape: ModelShape, flatten: bool = True) -> tuple[torch.Tensor, ...]:
    """Megatron's packed qkv -> HF q, k, v. With ``flatten=False`` they stay strided views shaped
    [groups, rows, ...] (same element order as the HF tensor, no copy)."""
    groups, hd = shape.num_query_groups, shape.head_dim
    per_group = shape.num_attention_heads // groups
    tail = qkv.shape[1:]
    grouped = qkv.reshape(groups, (per_group + 2) * hd, *tail)
    q, k, v = torch.split(grouped, [per_group * hd, hd, hd], dim=1)
    if not flatten:
        return q, k, v
    return q.reshape(-1, *tail), k.reshape(-1, *tail), v.reshape(-1, *tail)


def to_megatron_shard(
    rule: Rule, hf: list[torch.Tensor], shape: ModelShape, tp_rank: int, tp_size: int, padded_vocab: int
) -> torch.Tensor:
    """This tensor-parallel rank's shard of one Megatron parameter, built from its HF tensors."""
    if rule.split is Split.REPLICATED:
        return hf[0]
    if rule.split is Split.COLUMN:
        return hf[0].chunk(tp_size, dim=0)[tp_rank]
    if rule.split is Split.ROW:
        return hf[0].chunk(tp_size, dim=1)[tp_rank]
    if rule.split is Split.VOCAB:
        full = hf[0]
        pad = padded_vocab - full.shape[0]
        if pad:
            full = torch.cat([full, full.new_zeros(pad, *full.shape[1:])], dim=0)
        return full.chunk(tp_size, dim=0)[tp_rank]
    if rule.split is Split.QKV:
        return _qkv_pack(*hf, shape).chunk(tp_size, dim=0)[tp_rank]
    if rule.split is Split.GATE_UP:
        gate, up = hf
        return torch.cat([gate.chunk(tp_size, dim=0)[tp_rank], up.chunk(tp_size, dim=0)[tp_rank]], dim=0)
    raise AssertionError(rule.split)


def _cat(tensors: list[torch.Tensor], dim: int) -> torch.Tensor:
    """torch.cat, without its copy when there is a single shard (tensor parallel size 1)."""
    return tensors[0] if len(tensors) == 1 else torch.cat(tensors, dim=dim)


def to_hf(
    rule: Rule, shards: list[torch.Tensor], shape: ModelShape, flatten: bool = True
) -> list[tuple[str, torch.Tensor]]:
    """The HF tensors of one Megatron parameter from every tensor-parallel rank's shard (rank order).

    With a single shard and ``flatten=False`` the results are views of it (no copy; q/k/v keep a
    [groups, rows, ...] shape with the HF element order): the exporter copies them once, into its
    bucket buffer.
    """
    if rule.split is Split.REPLICATED:
        return [(rule.hf_names[0], shards[0])]
    if rule.split is Split.ROW:
        return [(rule.hf_names[0], _cat(shards, dim=1))]
    if rule.split in (Split.COLUMN, Split.VOCAB):
        full = _cat(shards, dim=0)
        if rule.split is Split.VOCAB:
            full = full[: shape.vocab_size]
        return [(rule.hf_names[0], full)]
    if rule.split is Split.QKV:
        return list(zip(rule.hf_names, _qkv_unpack(_cat(shards, dim=0), shape, flatten), strict=True))
    if rule.split is Split.GATE_UP:
        halves = [s.chunk(2, dim=0) for s in shards]
        gate = _cat([h[0] for h in halves], dim=0)
        up = _cat([h[1] for h in halves], dim=0)
        return [(rule.hf_names[0], gate), (rule.hf_names[1], up)]
    raise AssertionError(rule.split)
