"""The mixture-of-experts architecture of a Hugging Face checkpoint, in Megatron-core's terms.

One record, read from the HF config, says what Megatron's MoE fields must be for the model to
compute what transformers computes: how many experts, how the router scores and picks them, which
layers are MoE layers, and the shared expert. The Megatron backend builds its ``TransformerConfig``
from it; the MoE flags (``--num-experts``, ``--moe-*``) are checked against it. It lives in
``utils`` so that both the argument checks and the backends can read it.

Families: ``qwen3_moe`` (softmax router over the top-k, no shared expert) and ``glm4_moe``
(sigmoid router with a score-correction bias, shared experts, dense first layers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

MOE_FAMILIES = ("qwen3_moe", "glm4_moe")


@dataclass(frozen=True)
class MoeArch:
    """What Megatron-core's MoE fields must hold for one checkpoint (Megatron's names and meaning)."""

    num_experts: int
    router_topk: int
    ffn_hidden_size: int  # per routed expert (moe_ffn_hidden_size)
    layer_pattern: tuple[int, ...]  # per layer: 1 = MoE layer, 0 = dense MLP (moe_layer_freq as a list)
    score_function: Literal["softmax", "sigmoid"] = "softmax"
    pre_softmax: bool = False  # softmax over all experts, then top-k, no renormalisation
    expert_bias: bool = False  # sigmoid routing picks by score + a per-expert bias
    topk_scaling_factor: float | None = None  # routed output scale (HF routed_scaling_factor)
    shared_expert_intermediate_size: int | None = None  # all shared experts together; None: none
    num_groups: int | None = None  # group-limited routing: expert groups ...
    group_topk: int | None = None  # ... and how many of them a token may use

    @property
    def num_moe_layers(self) -> int:
        return sum(self.layer_pattern)

    def mlp_params(self, hidden_size: int, dense_ffn_hidden_size: int) -> tuple[int, int]:
        """(total, active-per-token) parameters of all MLP blocks: routers, experts, shared experts,
        dense MLPs. Active counts the top-k routed experts a token goes through."""
        expert = 3 * hidden_size * self.ffn_hidden_size  # gate, up, down (SwiGLU)
        shared = 3 * hidden_size * (self.shared_expert_intermediate_size or 0)
        router = self.num_experts * hidden_size
        dense = 3 * hidden_size * dense_ffn_hidden_size
        moe_layers, dense_layers = self.num_moe_layers, len(self.layer_pattern) - self.num_moe_layers
        total = moe_layers * (router + shared + self.num_experts * expert) + dense_layers * dense
        active = moe_layers * (router + shared + self.router_topk * expert) + dense_layers * dense
        return total, active


def _get(cfg: Any, name: str, default: Any = None) -> Any:
    value = cfg.get(name, default) if isinstance(cfg, dict) else getattr(cfg, name, default)
    return default if value is None else value


def _qwen3_moe(cfg: Any, num_layers: int) -> MoeArch:
    step = int(_get(cfg, "decoder_sparse_step", 1))
    dense_only = set(_get(cfg, "mlp_only_layers", []) or [])
    experts = int(_get(cfg, "num_experts") or _get(cfg, "num_local_experts"))
    pattern = tuple(
        1 if (i not in dense_only and experts > 0 and (i + 1) % step == 0) else 0 for i in range(num_layers)
    )
    return MoeArch(
        num_experts=experts,
        router_topk=int(_get(cfg, "num_experts_per_tok")),
        ffn_hidden_size=int(_get(cfg, "moe_intermediate_size")),
        layer_pattern=pattern,
        score_function="softmax",
        # HF renormalises the top-k softmax probabilities (norm_topk_prob), which is Megatron's softmax
        # over the top-k logits; without it HF keeps the full softmax's values: Megatron's pre-softmax
        pre_softmax=not bool(_get(cfg, "norm_topk_prob", False)),
    )


def _glm4_moe(cfg: Any, num_layers: int) -> MoeArch:
    if not bool(_get(cfg, "norm_topk_prob", True)):
        raise ValueError(
            "glm4_moe with norm_topk_prob false: Megatron-core's sigmoid router always renormalises "
            "the top-k scores, so it cannot compute this checkpoint's routing"
        )
    dense = int(_get(cfg, "first_k_dense_replace", 0))
    shared = int(_get(cfg, "n_shared_experts", 0))
    moe_ffn = int(_get(cfg, "moe_intermediate_size"))
    groups = int(_get(cfg, "n_group", 1))
    scale = float(_get(cfg, "routed_scaling_factor", 1.0))
    return MoeArch(
        num_experts=int(_get(cfg, "n_routed_experts") or _get(cfg, "num_local_experts")),
        router_topk=int(_get(cfg, "num_experts_per_tok")),
        ffn_hidden_size=moe_ffn,
        layer_pattern=tuple(0 if i < dense else 1 for i in range(num_layers)),
        score_function="sigmoid",
        expert_bias=True,
        topk_scaling_factor=None if scale == 1.0 else scale,
        shared_expert_intermediate_size=moe_ffn * shared if shared else None,
        num_groups=groups if groups > 1 else None,
        group_topk=int(_get(cfg, "topk_group", 1)) if groups > 1 else None,
    )


def moe_arch_from_hf_config(cfg: Any) -> MoeArch | None:
    """The MoE architecture of a transformers config (object or dict); None for a dense model."""
    family = _get(cfg, "model_type")
    num_layers = int(_get(cfg, "num_hidden_layers"))
    if family == "qwen3_moe":
        return _qwen3_moe(cfg, num_layers)
    if family == "glm4_moe":
        return _glm4_moe(cfg, num_layers)
    return None


def expand_layer_freq(freq: int | list[int], num_layers: int) -> tuple[int, ...]:
    """Megatron's ``moe_layer_freq``: an int N puts an MoE layer at every N-th layer (0, N, 2N, ...);
    a list gives the pattern itself."""
    if isinstance(freq, int):
        if freq < 1:
            raise ValueError(f"--moe-layer-freq {freq}: an integer frequency must be >= 1")
        return tuple(1 if i % freq == 0 else 0 for i in range(num_layers))
    return tuple(int(x) for x in freq)


def hf_moe_fields(arch: MoeArch, family: str) -> dict[str, Any]:
    """The ``config.json`` fields of ``arch`` in ``family``'s words (the inverse of
    :func:`moe_arch_from_hf_config`)."""
    dense = [i for i, bit in enumerate(arch.layer_pattern) if bit == 0]
    if family == "qwen3_moe":
        if arch.score_function != "softmax" or arch.expert_bias or arch.shared_expert_intermediate_size:
            raise ValueError("qwen3_moe has a softmax router without expert bias or shared experts")
        return {
            "num_experts": arch.num_experts,
            "num_experts_per_tok": arch.router_topk,
            "moe_intermediate_size": arch.ffn_hidden_size,
            "norm_topk_prob": not arch.pre_softmax,
            "decoder_sparse_step": 1,
            "mlp_only_layers": dense,
        }
    if family == "glm4_moe":
        if dense != list(range(len(dense))):
            raise ValueError("glm4_moe has its dense layers first (first_k_dense_replace)")
        shared = arch.shared_expert_intermediate_size or 0
        if shared % arch.ffn_hidden_size:
            raise ValueError("glm4_moe's shared experts are whole experts of moe_intermediate_size")
        return {
            "n_routed_experts": arch.num_experts,
            "num_experts_per_tok": arch.router_topk,
            "moe_intermediate_size": arch.ffn_hidden_size,
            "n_shared_experts": shared // arch.ffn_hidden_size,
            "first_k_dense_replace": len(dense),
            "norm_topk_prob": True,
            "routed_scaling_factor": arch.topk_scaling_factor or 1.0,
            "n_group": arch.num_groups or 1,
            "topk_group": arch.group_topk or 1,
        }
    raise ValueError(f"no MoE fields for model_type {family!r}; MoE families: {', '.join(MOE_FAMILIES)}")
