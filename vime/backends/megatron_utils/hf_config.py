"""Read a Hugging Face config (Qwen2 / Qwen3 / Llama, Qwen3-MoE / GLM-4.x-MoE) into one plain shape record.

Everything else in this package (model building, weight mapping) works from ``ModelShape`` so that
adding a family means teaching this file its config fields, nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vime.utils.moe_arch import MOE_FAMILIES, MoeArch, hf_moe_fields, moe_arch_from_hf_config

SUPPORTED_FAMILIES = ("qwen2", "qwen3", "llama", *MOE_FAMILIES)


@dataclass(frozen=True)
class ModelShape:
    """The architecture facts that decide Megatron's layout and the HF tensor names."""

    family: str
    num_layers: int
    hidden_size: int
    ffn_hidden_size: int
    num_attention_heads: int
    num_query_groups: int
    head_dim: int
    vocab_size: int
    max_position_embeddings: int
    rms_norm_eps: float
    rope_theta: float
    qkv_bias: bool
    qk_layernorm: bool
    tie_word_embeddings: bool
    rope_scaling_factor: float | None = None  # llama3-style rope scaling, when the config has it
    rotary_percent: float = 1.0  # share of each head's dimensions RoPE rotates (GLM-4.x: 0.5)
    moe: MoeArch | None = None  # the experts of an MoE model (``ffn_hidden_size``: its dense layers)

    def num_params(self) -> int:
        """Parameter count of the HF model (embeddings counted once when tied)."""
        return self._count(active=False)

    def active_params(self) -> int:
        """Parameters one token goes through: all but the routed experts it is not sent to."""
        return self._count(active=True)

    def _count(self, active: bool) -> int:
        h, f, hd = self.hidden_size, self.ffn_hidden_size, self.head_dim
        q, kv = self.num_attention_heads * hd, self.num_query_groups * hd
        attn = h * (q + 2 * kv) + q * h + (q + 2 * kv if self.qkv_bias else 0)
        attn += 2 * hd if self.qk_layernorm else 0
        if self.moe is None:
            mlp = self.num_layers * 3 * h * f
        else:
            total, per_token = self.moe.mlp_params(h, f)
            mlp = per_token if active else total
        embed = self.vocab_size * h * (1 if self.tie_word_embeddings else 2)
        return self.num_layers * (attn + 2 * h) + mlp + embed + h


def _get(cfg: Any, name: str, default: Any = None) -> Any:
    return getattr(cfg, name, default) if not isinstance(cfg, dict) else cfg.get(name, default)


def _rope(cfg: Any) -> tuple[float, float | None]:
    """(rope_theta, llama3 scaling factor or None); transformers 5 keeps both in rope_parameters."""
    params = _get(cfg, "rope_parameters") or _get(cfg, "rope_scaling") or {}
    theta = _get(cfg, "rope_theta") or params.get("rope_theta") or 10000.0
    rope_type = params.get("rope_type") or params.get("type")
    factor = params.get("factor") if rope_type == "llama3" else None
    if rope_type not in (None, "default", "llama3"):
        raise ValueError(
            f"rope type {rope_type!r} is not supported by the Megatron backend; use default or llama3"
        )
    return float(theta), factor


def shape_from_hf_config(cfg: Any) -> ModelShape:
    """Build a ``ModelShape`` from a transformers config object (or its dict)."""
    family = _get(cfg, "model_type")
    if family not in SUPPORTED_FAMILIES:
        raise ValueError(
            f"model_type {family!r} is not supported by the Megatron backend; supported: {', '.join(SUPPORTED_FAMILIES)}"
        )
    heads = _get(cfg, "num_attention_heads")
    hidden = _get(cfg, "hidden_size")
    theta, factor = _rope(cfg)
    partial = _get(cfg, "partial_rotary_factor") or (_get(cfg, "rope_parameters") or {}).get(
        "partial_rotary_factor"
    )
    return ModelShape(
        family=family,
        num_layers=_get(cfg, "num_hidden_layers"),
        hidden_size=hidden,
        ffn_hidden_size=_get(cfg, "intermediate_size"),
        num_attention_heads=heads,
        num_query_groups=_get(cfg, "num_key_value_heads") or heads,
        head_dim=_get(cfg, "head_dim") or hidden // heads,
        vocab_size=_get(cfg, "vocab_size"),
        max_position_embeddings=_get(cfg, "max_position_embeddings", 4096),
        rms_norm_eps=_get(cfg, "rms_norm_eps", 1e-6),
        rope_theta=theta,
        qkv_bias=True if family == "qwen2" else bool(_get(cfg, "attention_bias", False)),
        qk_layernorm=family in ("qwen3", "qwen3_moe") or bool(_get(cfg, "use_qk_norm", False)),
        tie_word_embeddings=bool(_get(cfg, "tie_word_embeddings", False)),
        rope_scaling_factor=factor,
        rotary_percent=float(partial or 1.0),
        moe=moe_arch_from_hf_config(cfg),
    )


def hf_config_dict(shape: ModelShape) -> dict[str, Any]:
    """The Hugging Face ``config.json`` fields of ``shape`` (the inverse of :func:`shape_from_hf_config`)."""
    config: dict[str, Any] = {
        "model_type": shape.family,
        "num_hidden_layers": shape.num_layers,
        "hidden_size": shape.hidden_size,
        "intermediate_size": shape.ffn_hidden_size,
        "num_attention_heads": shape.num_attention_heads,
        "num_key_value_heads": shape.num_query_groups,
        "head_dim": shape.head_dim,
        "vocab_size": shape.vocab_size,
        "max_position_embeddings": shape.max_position_embeddings,
        "rms_norm_eps": shape.rms_norm_eps,
        "rope_theta": shape.rope_theta,
        "tie_word_embeddings": shape.tie_word_embeddings,
    }
    if shape.family in ("llama", "glm4_moe"):
        config["attention_bias"] = shape.qkv_bias
    if shape.family == "glm4_moe":
        config["use_qk_norm"] = shape.qk_layernorm
        config["partial_rotary_factor"] = shape.rotary_percent
    if shape.moe is not None:
        config |= hf_moe_fields(shape.moe, shape.family)
    if shape.rope_scaling_factor is not None:
        config["rope_scaling"] = {"rope_type": "llama3", "factor": shape.rope_scaling_factor}
    return config


# Published shapes the benchmarks measure (random weights of these sizes; no download).
QWEN2_0_5B = ModelShape(
    family="qwen2",
    num_layers=24,
    hidden_size=896,
    ffn_hidden_size=4864,
    num_attention_heads=14,
    num_query_groups=2,
    head_dim=64,
    vocab_size=151936,
    max_position_embeddings=32768,
    rms_norm_eps=1e-6,
    rope_theta=1e6,
    qkv_bias=True,
    qk_layernorm=False,
    tie_word_embeddings=True,
)
QWEN2_1_5B = ModelShape(
    family="qwen2",
    num_layers=28,
    hidden_size=1536,
    ffn_hidden_size=8960,
    num_attention_heads=12,
    num_query_groups=2,
    head_dim=128,
    vocab_size=151936,
    max_position_embeddings=32768,
    rms_norm_eps=1e-6,
    rope_theta=1e6,
    qkv_bias=True,
    qk_layernorm=False,
    tie_word_embeddings=True,
)


def load_shape(hf_dir: str | Path) -> ModelShape:
    """Read ``config.json`` of an HF checkpoint directory."""
    from transformers import AutoConfig

    return shape_from_hf_config(AutoConfig.from_pretrained(str(hf_dir)))


def padded_vocab_size(vocab_size: int, tp_size: int, divisible_by: int = 128) -> int:
    """Megatron pads the vocabulary so every tensor-parallel rank holds an equal slice."""
    multiple = divisible_by * tp_size
    return -(-vocab_size // multiple) * multiple
