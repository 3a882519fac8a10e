"""Megatron's model-architecture flags, as slime's ``scripts/models/*.sh`` pass them.

The Hugging Face checkpoint (``--hf-checkpoint``) stays the source of truth for what vime builds:
these flags describe the same model in Megatron's words, and ``model_check`` refuses a launch
whose flags disagree with the checkpoint, naming the flag, its value and the checkpoint's value.
The Megatron backend then builds its ``TransformerConfig`` from them (``ModelArchFlags``), so a
recipe means what it says in both backends.

Switches (``--swiglu``, ``--qk-layernorm``, ...) default to None, not False: with no architecture
flag given at all, vime reads everything from the checkpoint; once any is given, a missing switch
has Megatron's meaning (off) and is checked like the others.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from typing import Any

POSITION_EMBEDDINGS = ("learned_absolute", "rope", "mrope", "relative", "none")


def _switch(g, flag: str, help_text: str, dest: str | None = None) -> None:
    g.add_argument(flag, action="store_const", const=True, default=None, dest=dest, help=help_text)


def add_model_arch_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group(
        "model architecture (Megatron's flags)",
        "Optional: the model comes from --hf-checkpoint; given flags must match its config.json.",
    )
    g.add_argument("--num-layers", type=int, default=None, help="Transformer layers.")
    g.add_argument("--hidden-size", type=int, default=None, help="Hidden size.")
    g.add_argument("--ffn-hidden-size", type=int, default=None, help="MLP intermediate size (dense layers).")
    g.add_argument("--num-attention-heads", type=int, default=None, help="Attention (query) heads.")
    _switch(g, "--group-query-attention", "Grouped-query attention (with --num-query-groups).")
    g.add_argument("--num-query-groups", type=int, default=None, help="Key/value heads under GQA.")
    g.add_argument("--kv-channels", type=int, default=None, help="Head dimension (default: hidden / heads).")
    g.add_argument("--vocab-size", type=int, default=None, help="Vocabulary size before padding.")
    g.add_argument(
        "--make-vocab-size-divisible-by",
        type=int,
        default=128,
        help="Megatron pads the vocabulary to a multiple of this times the tensor-parallel size.",
    )
    g.add_argument(
        "--max-position-embeddings",
        type=int,
        default=None,
        help="Longest sequence the model's position tables cover (default: --seq-length, else the checkpoint's).",
    )
    g.add_argument(
        "--seq-length",
        type=int,
        default=None,
        help="Megatron's sequence length; the default of --max-position-embeddings, as in slime.",
    )
    _switch(g, "--swiglu", "Gated SiLU MLP (SwiGLU).")
    g.add_argument(
        "--normalization",
        choices=["LayerNorm", "RMSNorm"],
        default=None,
        help="Norm layers (Megatron: LayerNorm).",
    )
    g.add_argument("--norm-epsilon", type=float, default=None, help="Norm epsilon (Megatron: 1e-5).")
    g.add_argument(
        "--position-embedding-type",
        choices=POSITION_EMBEDDINGS,
        default=None,
        help="Position embedding (Megatron: learned_absolute).",
    )
    _switch(g, "--use-rotary-position-embeddings", "Same as --position-embedding-type rope.")
    _switch(g, "--no-position-embedding", "No learned absolute position embedding (RoPE models have none).")
    g.add_argument("--rotary-base", type=float, default=None, help="RoPE theta (Megatron: 10000).")
    g.add_argument(
        "--rotary-percent", type=float, default=None, help="Fraction of the head dim rotated (Megatron: 1.0)."
    )
    _switch(g, "--rotary-interleaved", "Interleaved RoPE pairs instead of rotate-half.")
    _switch(g, "--use-rope-scaling", "Llama-3 RoPE frequency scaling.")
    g.add_argument(
        "--rotary-scaling-factor", type=float, default=None, help="Llama-3 RoPE scaling factor (Megatron: 8)."
    )
    _switch(g, "--qk-layernorm", "RMSNorm on queries and keys per head (Qwen3).")
    _switch(g, "--disable-bias-linear", "No biases in the linear layers.")
    _switch(g, "--add-qkv-bias", "Biases in the query/key/value projection (Qwen2).")
    _switch(g, "--untie-embeddings-and-output-weights", "Separate input embedding and output layer.")
    g.add_argument(
        "--spec",
        nargs=2,
        metavar=("MODULE", "NAME"),
        default=None,
        help="Megatron backend: a layer spec (or fn(args, config, vp_stage) returning one) by module path.",
    )


# The flags that describe the architecture (``--spec``, padding and sequence length only shape how
# it is built): if any is given, the user is describing the model and every one is checked.
ARCH_DESTS = (
    "num_layers",
    "hidden_size",
    "ffn_hidden_size",
    "num_attention_heads",
    "group_query_attention",
    "num_query_groups",
    "kv_channels",
    "vocab_size",
    "swiglu",
    "normalization",
    "norm_epsilon",
    "position_embedding_type",
    "use_rotary_position_embeddings",
    "rotary_base",
    "rotary_percent",
    "rotary_interleaved",
    "use_rope_scaling",
    "rotary_scaling_factor",
    "qk_layernorm",
    "disable_bias_linear",
    "add_qkv_bias",
    "untie_embeddings_and_output_weights",
)


@dataclass(frozen=True)
class ModelArchFlags:
    """The architecture flags as given (None: not given), with Megatron's meaning of each."""

    num_layers: int | None = None
    hidden_size: int | None = None
    ffn_hidden_size: int | None = None
    num_attention_heads: int | None = None
    group_query_attention: bool | None = None
    num_query_groups: int | None = None
    kv_channels: int | None = None
    vocab_size: int | None = None
    make_vocab_size_divisible_by: int = 128
    max_position_embeddings: int | None = None
    seq_length: int | None = None
    swiglu: bool | None = None
    normalization: str | None = None
    norm_epsilon: float | None = None
    position_embedding_type: str | None = None
    use_rotary_position_embeddings: bool | None = None
    no_position_embedding: bool | None = None
    rotary_base: float | None = None
    rotary_percent: float | None = None
    rotary_interleaved: bool | None = None
    use_rope_scaling: bool | None = None
    rotary_scaling_factor: float | None = None
    qk_layernorm: bool | None = None
    disable_bias_linear: bool | None = None
    add_qkv_bias: bool | None = None
    untie_embeddings_and_output_weights: bool | None = None
    spec: tuple[str, str] | None = None

    @classmethod
    def from_args(cls, args: Any) -> ModelArchFlags:
        values = {f.name: getattr(args, f.name, None) for f in fields(cls)}
        if values["make_vocab_size_divisible_by"] is None:
            values["make_vocab_size_divisible_by"] = 128
        if values["spec"] is not None:
            values["spec"] = tuple(values["spec"])
        return cls(**values)

    @property
    def described(self) -> bool:
        """Whether the launch describes the architecture (then every switch means on/off)."""
        return any(getattr(self, dest) is not None for dest in ARCH_DESTS)

    # ---- Megatron's effective values (what Megatron would build from these flags) ----------------
    def effective(self) -> dict[str, Any]:
        """Megatron's reading of the flags, defaults filled; only meaningful when ``described``."""
        heads = self.num_attention_heads
        position = self.position_embedding_type or "learned_absolute"
        if self.use_rotary_position_embeddings:
            position = "rope"
        out: dict[str, Any] = {
            "num_layers": self.num_layers,
            "hidden_size": self.hidden_size,
            "ffn_hidden_size": self.ffn_hidden_size,
            "num_attention_heads": heads,
            "num_query_groups": self.num_query_groups if self.group_query_attention else heads,
            "kv_channels": self.kv_channels
            or (self.hidden_size // heads if self.hidden_size and heads else None),
            "vocab_size": self.vocab_size,
            "gated_silu": bool(self.swiglu),
            "normalization": self.normalization or "LayerNorm",
            "norm_epsilon": self.norm_epsilon if self.norm_epsilon is not None else 1e-5,
            "position_embedding_type": position,
            "rotary_base": self.rotary_base if self.rotary_base is not None else 10000.0,
            "rotary_percent": self.rotary_percent if self.rotary_percent is not None else 1.0,
            "rotary_interleaved": bool(self.rotary_interleaved),
            "rope_scaling_factor": ((self.rotary_scaling_factor or 8.0) if self.use_rope_scaling else None),
            "qk_layernorm": bool(self.qk_layernorm),
            "add_bias_linear": not self.disable_bias_linear,
            "add_qkv_bias": bool(self.add_qkv_bias),
            "untie_embeddings_and_output_weights": bool(self.untie_embeddings_and_output_weights),
        }
        return out

    def position_table_length(self) -> int | None:
        """--max-position-embeddings, else --seq-length (slime's default), else None (the checkpoint's)."""
        return self.max_position_embeddings or self.seq_length
