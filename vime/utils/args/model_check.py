"""Check Megatron's architecture flags against the checkpoint's ``config.json``.

slime checks a few of them (hidden size, heads, layers, FFN size, norm epsilon, tied embeddings,
RoPE theta); vime checks every flag it would build the model from, since its Megatron backend
builds from these flags and a disagreement would load weights into the wrong shape. The check
reads ``config.json`` directly (no transformers import) and knows the families vime converts;
for other families it checks only the fields every Hugging Face config names the same way.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vime.utils.args.model_arch import ModelArchFlags

# Families whose layout vime knows field by field (rotate-half RoPE, gated SiLU MLPs, ...).
KNOWN_FAMILIES = ("qwen2", "qwen3", "llama", "mistral", "qwen3_moe", "glm4_moe", "deepseek_v3")
MOE_CONFIG_KEYS = ("moe_intermediate_size", "num_experts", "n_routed_experts", "num_local_experts")


@dataclass(frozen=True)
class Mismatch:
    """One flag that disagrees with the checkpoint; ``line`` is what the user reads."""

    flag: str
    given: Any
    hf_field: str
    hf_value: Any
    fix: str

    def line(self, checkpoint: str) -> str:
        given = "not given" if self.given is None else f"{self.given}"
        return (
            f"{self.flag} ({given}) disagrees with --hf-checkpoint {checkpoint}: its config.json has "
            f"{self.hf_field}={self.hf_value!r}; {self.fix}"
        )


def read_hf_config(checkpoint: str | Path) -> dict[str, Any]:
    """``config.json`` of a checkpoint dir; a multimodal config's text model when it nests one."""
    cfg = json.loads((Path(checkpoint) / "config.json").read_text())
    return cfg.get("text_config") or cfg


def rope_theta(cfg: dict[str, Any]) -> float | None:
    params = cfg.get("rope_parameters") or {}
    theta = params.get("rope_theta") if isinstance(params, dict) else None
    theta = theta if theta is not None else cfg.get("rope_theta")
    return float(theta) if theta is not None else None


def llama3_rope_factor(cfg: dict[str, Any]) -> float | None:
    for key in ("rope_parameters", "rope_scaling"):
        params = cfg.get(key)
        if isinstance(params, dict) and (params.get("rope_type") or params.get("type")) == "llama3":
            return float(params["factor"])
    return None


def is_moe_config(cfg: dict[str, Any]) -> bool:
    return any(cfg.get(key) for key in MOE_CONFIG_KEYS)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(float(a), float(b), rel_tol=1e-6)
    return a == b


def _numbers(arch: ModelArchFlags, eff: dict[str, Any], cfg: dict[str, Any]) -> list[Mismatch]:
    heads = cfg.get("num_attention_heads")
    hidden = cfg.get("hidden_size")
    expected: list[tuple[str, str, Any, Any, str]] = [
        ("--num-layers", "num_hidden_layers", arch.num_layers, cfg.get("num_hidden_layers"), "num_layers"),
        ("--hidden-size", "hidden_size", arch.hidden_size, hidden, "hidden_size"),
        ("--num-attention-heads", "num_attention_heads", arch.num_attention_heads, heads, "heads"),
        ("--vocab-size", "vocab_size", arch.vocab_size, cfg.get("vocab_size"), "vocab_size"),
    ]
    if not is_moe_config(cfg):  # a MoE checkpoint's intermediate_size is its dense layers' (MoE flags)
        expected.append(
            ("--ffn-hidden-size", "intermediate_size", arch.ffn_hidden_size, cfg.get("intermediate_size"), "")
        )
    out = [
        Mismatch(flag, given, field, hf, "fix the flag or give the checkpoint the recipe is for")
        for flag, field, given, hf, _ in expected
        if given is not None and hf is not None and not _same(given, hf)
    ]
    if arch.group_query_attention or arch.num_query_groups is not None or arch.num_attention_heads:
        kv = cfg.get("num_key_value_heads") or heads
        if eff["num_query_groups"] is not None and kv is not None and eff["num_query_groups"] != kv:
            fix = (
                f"pass --group-query-attention --num-query-groups {kv}"
                if kv != heads
                else "drop --group-query-attention / --num-query-groups (the checkpoint has one KV head per head)"
            )
            out.append(
                Mismatch("--num-query-groups", eff["num_query_groups"], "num_key_value_heads", kv, fix)
            )
    if eff["kv_channels"] is not None and heads and hidden:
        head_dim = cfg.get("head_dim") or hidden // heads
        if eff["kv_channels"] != head_dim:
            out.append(
                Mismatch(
                    "--kv-channels",
                    eff["kv_channels"],
                    "head_dim",
                    head_dim,
                    f"pass --kv-channels {head_dim}",
                )
            )
    return out


def _layout(eff: dict[str, Any], cfg: dict[str, Any]) -> list[Mismatch]:
    """Switches and enums: Megatron's reading of the flags (absent = off) against the config."""
    family = cfg.get("model_type")
    known = family in KNOWN_FAMILIES
    out: list[Mismatch] = []

    def expect(flag: str, given: Any, field: str, hf: Any, fix: str, ok: bool | None = None) -> None:
        same = _same(given, hf) if ok is None else ok
        if not same:
            shown = None if given is False else given
            out.append(Mismatch(flag, shown, field, hf, fix))

    act = cfg.get("hidden_act") or cfg.get("hidden_activation")
    if act is not None:
        gated = act in ("silu", "swish")
        expect(
            "--swiglu",
            eff["gated_silu"],
            "hidden_act",
            act,
            "add --swiglu" if gated else "drop --swiglu",
            eff["gated_silu"] == gated,
        )
    rms = cfg.get("rms_norm_eps")
    ln = cfg.get("layer_norm_eps", cfg.get("layer_norm_epsilon"))
    if rms is not None or ln is not None:
        norm, eps = ("RMSNorm", rms) if rms is not None else ("LayerNorm", ln)
        expect("--normalization", eff["normalization"], "norm", norm, f"pass --normalization {norm}")
        expect(
            "--norm-epsilon",
            eff["norm_epsilon"],
            "rms_norm_eps" if rms is not None else "layer_norm_eps",
            eps,
            f"pass --norm-epsilon {eps}",
        )
    theta = rope_theta(cfg)
    if theta is not None or known:
        expect(
            "--position-embedding-type",
            eff["position_embedding_type"],
            "position embedding",
            "rope",
            "pass --position-embedding-type rope (or --use-rotary-position-embeddings)",
        )
    if theta is not None and eff["position_embedding_type"] == "rope":
        expect("--rotary-base", eff["rotary_base"], "rope_theta", theta, f"pass --rotary-base {theta:g}")
        partial = float(cfg.get("partial_rotary_factor", 1.0))
        expect(
            "--rotary-percent",
            eff["rotary_percent"],
            "partial_rotary_factor",
            partial,
            f"pass --rotary-percent {partial:g}",
        )
        factor = llama3_rope_factor(cfg)
        fix = (
            f"pass --use-rope-scaling --rotary-scaling-factor {factor:g}"
            if factor
            else "drop --use-rope-scaling"
        )
        expect("--use-rope-scaling", eff["rope_scaling_factor"], "rope_parameters llama3 factor", factor, fix)
    tied = bool(cfg.get("tie_word_embeddings", True))
    untie = eff["untie_embeddings_and_output_weights"]
    expect(
        "--untie-embeddings-and-output-weights",
        untie,
        "tie_word_embeddings",
        tied,
        "drop --untie-embeddings-and-output-weights" if tied else "add --untie-embeddings-and-output-weights",
        untie != tied,
    )
    if known:
        qk = family.startswith("qwen3") or bool(cfg.get("use_qk_norm"))
        expect(
            "--qk-layernorm",
            eff["qk_layernorm"],
            "q/k norms",
            qk,
            "add --qk-layernorm" if qk else "drop --qk-layernorm",
        )
        mlp_bias = bool(cfg.get("mlp_bias", False))
        expect(
            "--disable-bias-linear",
            not eff["add_bias_linear"],
            "mlp_bias",
            mlp_bias,
            "drop --disable-bias-linear" if mlp_bias else "add --disable-bias-linear",
            eff["add_bias_linear"] == mlp_bias,
        )
        qkv = family == "qwen2" or bool(cfg.get("attention_bias", False))
        expect(
            "--add-qkv-bias",
            eff["add_qkv_bias"],
            "q/k/v biases",
            qkv,
            "add --add-qkv-bias" if qkv else "drop --add-qkv-bias",
        )
        expect(
            "--rotary-interleaved",
            eff["rotary_interleaved"],
            "rotate-half RoPE",
            False,
            "drop --rotary-interleaved",
        )
    return out


def check_model_flags(arch: ModelArchFlags, cfg: dict[str, Any]) -> list[Mismatch]:
    """Every architecture flag that disagrees with ``cfg`` (empty when none is given)."""
    if not arch.described:
        return []
    eff = arch.effective()
    return _numbers(arch, eff, cfg) + _layout(eff, cfg)


def mismatch_line(mismatches: list[Mismatch], checkpoint: str) -> str:
    """One line: the first disagreement in full, the others by flag name."""
    first = mismatches[0].line(checkpoint)
    if len(mismatches) > 1:
        others = ", ".join(dict.fromkeys(m.flag for m in mismatches[1:]))
        first += f" (also: {others})"
    return first


# slime's megatron_to_hf picks a weight converter by the first family its model name contains
# (lower case, without "_" and "-"); the name defaults to the HF config class's, e.g. "qwen3moeconfig".
_CONVERTER_FAMILIES = (
    ("minimaxm2", ("minimaxm2",)),
    ("deepseekv3", ("glm4moelite", "deepseekv3", "deepseekv32", "glmmoedsa", "kimi")),
    ("glm4moe", ("glm4moe",)),
    ("glm4", ("glm4",)),
    ("qwen3next", ("qwen3next",)),
    ("qwen35", ("qwen35",)),
    ("qwen3vl", ("qwen3vl",)),
    ("qwen2moe", ("qwen2moe", "qwen3moe")),
    ("qwen2", ("qwen2", "qwen3")),
    ("llama", ("llama",)),
    ("mimo", ("mimo",)),
)


def converter_family(model_name: str) -> str | None:
    """The weight converter slime's ``--model-name`` selects (None: slime has none for that name)."""
    key = model_name.lower().replace("_", "").replace("-", "")
    for family, names in _CONVERTER_FAMILIES:
        if any(name in key for name in names):
            return family
    return None


def model_name_problem(model_name: str, cfg: dict[str, Any] | None) -> str | None:
    """``--model-name`` is honoured when it picks the conversion vime applies to this checkpoint
    (vime converts by config.json); otherwise one line that says why."""
    family = converter_family(model_name)
    if family is None:
        return f"--model-name {model_name}: slime has no weight converter of that name; drop it (vime converts by config.json)"
    if cfg is None or not cfg.get("model_type"):
        return None
    own = converter_family(str(cfg["model_type"]))
    if own != family:
        return (
            f"--model-name {model_name} selects slime's {family} weight conversion, but --hf-checkpoint is a "
            f"{cfg['model_type']} model ({own or 'no slime converter'}); drop --model-name (vime converts by config.json)"
        )
    return None
