"""Megatron's mixture-of-experts flags, as slime's ``scripts/models/*.sh`` pass them.

Two kinds. The architecture flags (``--num-experts``, ``--moe-router-topk``, ``--moe-layer-freq``,
the router's score function, expert bias, scaling, groups, the shared expert) say what the model
computes: the checkpoint's ``config.json`` stays the source of truth and a flag that disagrees with
it is refused in one line, as the dense architecture flags are (``model_check``). The runtime
flags (dispatcher, auxiliary loss, router dtype, grouped GEMM, permute fusion, expert-bias update
rate, token-drop policy, DeepEP) say how megatron-core runs the experts; each is honoured with
megatron-core 0.16.1's meaning, falls back with a warning that names what runs instead, or is
refused. Expert parallel sizes are in ``megatron_runtime`` with the other parallel sizes; their
check against the number of experts and of training GPUs is here.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, fields
from typing import Any

from vime.utils.args.flag_types import int_or_pattern
from vime.utils.args.model_check import Mismatch, is_moe_config
from vime.utils.moe_arch import MoeArch, expand_layer_freq, moe_arch_from_hf_config

LOAD_BALANCING_TYPES = ("aux_loss", "seq_aux_loss", "global_aux_loss", "sinkhorn", "none")
DISPATCHERS = ("allgather", "alltoall", "flex")
# Megatron-LM's defaults for the runtime flags left unset (vime keeps None to tell "not given")
DEFAULT_DISPATCHER = "allgather"
DEFAULT_BIAS_UPDATE_RATE = 1e-3


def _switch(g, flag: str, help_text: str) -> None:
    g.add_argument(flag, action="store_const", const=True, default=None, help=help_text)


def add_moe_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group(
        "mixture of experts (Megatron's flags)",
        "Architecture flags are optional: the model comes from --hf-checkpoint and given flags must "
        "match its config.json. Runtime flags choose how megatron-core runs the experts.",
    )
    g.add_argument("--num-experts", type=int, default=None, help="Routed experts per MoE layer.")
    g.add_argument("--moe-router-topk", type=int, default=None, help="Experts each token is routed to.")
    g.add_argument(
        "--moe-ffn-hidden-size", type=int, default=None, help="Intermediate size of one routed expert."
    )
    g.add_argument(
        "--moe-shared-expert-intermediate-size",
        type=int,
        default=None,
        help="Intermediate size of all shared experts together (none when unset).",
    )
    g.add_argument(
        "--moe-layer-freq",
        type=int_or_pattern,
        default=None,
        help="MoE layers: N = every N-th layer; a pattern such as '[0]*3+[1]*45' (1 = MoE, 0 = dense) "
        "per layer (Megatron: 1).",
    )
    g.add_argument(
        "--moe-router-score-function",
        choices=["softmax", "sigmoid"],
        default=None,
        help="Router score function (Megatron: softmax).",
    )
    _switch(
        g, "--moe-router-enable-expert-bias", "Sigmoid routing picks experts by score plus a per-expert bias."
    )
    g.add_argument(
        "--moe-router-topk-scaling-factor",
        type=float,
        default=None,
        help="Scale of the routed experts' weights (HF routed_scaling_factor).",
    )
    _switch(
        g,
        "--moe-router-pre-softmax",
        "Softmax over all experts before the top-k (no renormalisation); by default softmax over the top-k.",
    )
    g.add_argument(
        "--moe-router-num-groups", type=int, default=None, help="Expert groups of group-limited routing."
    )
    g.add_argument(
        "--moe-router-group-topk",
        type=int,
        default=None,
        help="Groups a token may use in group-limited routing.",
    )
    _switch(g, "--moe-shared-expert-gate", "A sigmoid gate on the shared experts' output (Qwen2-MoE style).")
    # how megatron-core runs the experts
    g.add_argument(
        "--moe-token-dispatcher-type",
        choices=DISPATCHERS,
        default=None,
        help="How tokens reach their experts' ranks (Megatron: allgather). flex needs DeepEP, not shipped.",
    )
    g.add_argument(
        "--moe-router-load-balancing-type",
        nargs="+",
        choices=LOAD_BALANCING_TYPES,
        default=None,
        help="Load-balancing loss(es) (Megatron: aux_loss); effective only with a non-zero --moe-aux-loss-coeff.",
    )
    g.add_argument(
        "--moe-aux-loss-coeff",
        nargs="+",
        type=float,
        default=None,
        help="Coefficient per load-balancing type (Megatron: 0.0, no loss).",
    )
    g.add_argument(
        "--moe-router-dtype",
        choices=["fp32", "fp64"],
        default=None,
        help="Router logits and scores in this dtype (default: the model's).",
    )
    g.add_argument(
        "--moe-router-bias-update-rate",
        type=float,
        default=None,
        help="Step of the expert-bias update after each optimizer step (Megatron: 1e-3; 0 keeps the bias).",
    )
    g.add_argument(
        "--moe-token-drop-policy",
        choices=["probs", "position"],
        default="probs",
        help="Which tokens an over-capacity expert drops (only with an expert capacity; vime sets none).",
    )
    _switch(
        g,
        "--moe-grouped-gemm",
        "One grouped GEMM for all local experts. Needs the grouped_gemm package or Transformer Engine, "
        "which vime does not ship: megatron falls back to one GEMM per expert (same result) with a warning.",
    )
    _switch(
        g,
        "--moe-permute-fusion",
        "Transformer Engine's fused token permutation; without Transformer Engine the unfused one "
        "(same result) runs, with a warning.",
    )
    _switch(g, "--moe-enable-deepep", "DeepEP token dispatch: refused, DeepEP is not shipped.")
    _switch(
        g,
        "--use-routing-replay",
        "slime's routing replay (record the routers' choices in the log-prob pass, replay them in "
        "training): refused, not built yet.",
    )
    _switch(
        g,
        "--use-rollout-routing-replay",
        "slime's rollout routing replay (the engine's routed experts replayed in training): refused, the "
        "engine cannot return them (see the refusal line).",
    )


ARCH_DESTS = (
    "num_experts",
    "moe_router_topk",
    "moe_ffn_hidden_size",
    "moe_shared_expert_intermediate_size",
    "moe_layer_freq",
    "moe_router_score_function",
    "moe_router_enable_expert_bias",
    "moe_router_topk_scaling_factor",
    "moe_router_pre_softmax",
    "moe_router_num_groups",
    "moe_router_group_topk",
    "moe_shared_expert_gate",
)


@dataclass(frozen=True)
class MoeFlags:
    """The MoE flags as given (None: not given); Megatron's defaults through the properties."""

    num_experts: int | None = None
    moe_router_topk: int | None = None
    moe_ffn_hidden_size: int | None = None
    moe_shared_expert_intermediate_size: int | None = None
    moe_layer_freq: int | list[int] | None = None
    moe_router_score_function: str | None = None
    moe_router_enable_expert_bias: bool | None = None
    moe_router_topk_scaling_factor: float | None = None
    moe_router_pre_softmax: bool | None = None
    moe_router_num_groups: int | None = None
    moe_router_group_topk: int | None = None
    moe_shared_expert_gate: bool | None = None
    moe_token_dispatcher_type: str | None = None
    moe_router_load_balancing_type: tuple[str, ...] | None = None
    moe_aux_loss_coeff: tuple[float, ...] | None = None
    moe_router_dtype: str | None = None
    moe_router_bias_update_rate: float | None = None
    moe_token_drop_policy: str = "probs"
    moe_grouped_gemm: bool | None = None
    moe_permute_fusion: bool | None = None
    moe_enable_deepep: bool | None = None
    use_routing_replay: bool | None = None
    use_rollout_routing_replay: bool | None = None

    @classmethod
    def from_args(cls, args: Any) -> MoeFlags:
        defaults = cls()
        values = {f.name: getattr(args, f.name, getattr(defaults, f.name)) for f in fields(cls)}
        for key in ("moe_router_load_balancing_type", "moe_aux_loss_coeff"):
            if values[key] is not None:
                values[key] = tuple(values[key])
        return cls(**values)

    @property
    def described(self) -> bool:
        """Whether the launch describes the MoE architecture (then every switch means on/off)."""
        return any(getattr(self, dest) is not None for dest in ARCH_DESTS)

    # ---- runtime values with Megatron's defaults -----------------------------------------------
    @property
    def dispatcher(self) -> str:
        return self.moe_token_dispatcher_type or DEFAULT_DISPATCHER

    @property
    def load_balancing(self) -> tuple[str, ...]:
        return self.moe_router_load_balancing_type or ("aux_loss",)

    @property
    def aux_loss_coeffs(self) -> tuple[float, ...]:
        return self.moe_aux_loss_coeff or (0.0,) * len(self.load_balancing)

    @property
    def has_aux_loss(self) -> bool:
        return any(
            c != 0.0 for t, c in zip(self.load_balancing, self.aux_loss_coeffs, strict=False) if t != "none"
        )

    @property
    def bias_update_rate(self) -> float:
        rate = self.moe_router_bias_update_rate
        return DEFAULT_BIAS_UPDATE_RATE if rate is None else rate


def _hf_names(cfg: dict[str, Any]) -> dict[str, str]:
    """The config.json field behind each MoE fact, in this family's words (for the refusal line)."""
    if cfg.get("model_type") == "glm4_moe":
        return {
            "experts": "n_routed_experts",
            "pattern": "first_k_dense_replace",
            "shared": "n_shared_experts",
            "scale": "routed_scaling_factor",
            "groups": "n_group",
            "group_topk": "topk_group",
            "router": "router (sigmoid with e_score_correction_bias)",
        }
    return {
        "experts": "num_experts",
        "pattern": "decoder_sparse_step / mlp_only_layers",
        "shared": "shared experts",
        "scale": "routed_scaling_factor",
        "groups": "n_group",
        "group_topk": "topk_group",
        "router": "router (softmax)",
    }


def _pattern_text(pattern: tuple[int, ...]) -> str:
    """A layer pattern the way slime's scripts write it: '[0]*1+[1]*46'."""
    runs: list[tuple[int, int]] = []
    for bit in pattern:
        if runs and runs[-1][0] == bit:
            runs[-1] = (bit, runs[-1][1] + 1)
        else:
            runs.append((bit, 1))
    return "+".join(f"[{bit}]*{n}" for bit, n in runs)


def _arch_mismatches(
    flags: MoeFlags, arch: MoeArch, cfg: dict[str, Any], dense_ffn: int | None
) -> list[Mismatch]:
    """Megatron's reading of the flags (defaults filled: the launch describes the MoE) vs the checkpoint."""
    names = _hf_names(cfg)
    num_layers = len(arch.layer_pattern)
    out: list[Mismatch] = []

    def check(flag: str, given: Any, hf_field: str, hf_value: Any, megatron_value: Any, fix: str) -> None:
        same = (
            math.isclose(megatron_value, hf_value, rel_tol=1e-6)
            if isinstance(hf_value, float) and isinstance(megatron_value, float)
            else megatron_value == hf_value
        )
        if not same:
            out.append(Mismatch(flag, given, hf_field, hf_value, fix))

    check(
        "--num-experts",
        flags.num_experts,
        names["experts"],
        arch.num_experts,
        flags.num_experts,
        f"pass --num-experts {arch.num_experts}",
    )
    topk = flags.moe_router_topk or 2
    check(
        "--moe-router-topk",
        flags.moe_router_topk,
        "num_experts_per_tok",
        arch.router_topk,
        topk,
        f"pass --moe-router-topk {arch.router_topk}",
    )
    ffn = flags.moe_ffn_hidden_size or dense_ffn
    check(
        "--moe-ffn-hidden-size",
        flags.moe_ffn_hidden_size,
        "moe_intermediate_size",
        arch.ffn_hidden_size,
        ffn,
        f"pass --moe-ffn-hidden-size {arch.ffn_hidden_size}",
    )
    shared = arch.shared_expert_intermediate_size
    check(
        "--moe-shared-expert-intermediate-size",
        flags.moe_shared_expert_intermediate_size,
        names["shared"],
        shared,
        flags.moe_shared_expert_intermediate_size,
        f"pass --moe-shared-expert-intermediate-size {shared}"
        if shared
        else "drop it: the checkpoint has no shared expert",
    )
    freq = flags.moe_layer_freq if flags.moe_layer_freq is not None else 1
    try:
        pattern = expand_layer_freq(freq, num_layers)
    except ValueError:
        pattern = ()
    check(
        "--moe-layer-freq",
        _pattern_text(tuple(freq)) if isinstance(freq, list) else freq,
        names["pattern"],
        _pattern_text(arch.layer_pattern),
        _pattern_text(pattern) if len(pattern) == num_layers else pattern,
        f"pass --moe-layer-freq {_pattern_text(arch.layer_pattern)}",
    )
    score = flags.moe_router_score_function or "softmax"
    check(
        "--moe-router-score-function",
        score,
        names["router"],
        arch.score_function,
        score,
        f"pass --moe-router-score-function {arch.score_function}",
    )
    check(
        "--moe-router-enable-expert-bias",
        flags.moe_router_enable_expert_bias,
        "e_score_correction_bias",
        arch.expert_bias,
        bool(flags.moe_router_enable_expert_bias),
        "add --moe-router-enable-expert-bias" if arch.expert_bias else "drop --moe-router-enable-expert-bias",
    )
    hf_scale = arch.topk_scaling_factor or 1.0
    check(
        "--moe-router-topk-scaling-factor",
        flags.moe_router_topk_scaling_factor,
        names["scale"],
        hf_scale,
        float(flags.moe_router_topk_scaling_factor or 1.0),
        f"pass --moe-router-topk-scaling-factor {hf_scale:g}",
    )
    if arch.score_function == "softmax":  # Megatron reads --moe-router-pre-softmax for softmax only
        check(
            "--moe-router-pre-softmax",
            flags.moe_router_pre_softmax,
            "norm_topk_prob",
            not arch.pre_softmax,
            not flags.moe_router_pre_softmax,
            "add --moe-router-pre-softmax" if arch.pre_softmax else "drop --moe-router-pre-softmax",
        )
    check(
        "--moe-router-num-groups",
        flags.moe_router_num_groups,
        names["groups"],
        arch.num_groups or 1,
        flags.moe_router_num_groups or 1,
        f"pass --moe-router-num-groups {arch.num_groups or 1}",
    )
    if arch.num_groups:
        check(
            "--moe-router-group-topk",
            flags.moe_router_group_topk,
            names["group_topk"],
            arch.group_topk,
            flags.moe_router_group_topk,
            f"pass --moe-router-group-topk {arch.group_topk}",
        )
    if 0 in arch.layer_pattern and dense_ffn is not None and cfg.get("intermediate_size") is not None:
        hf_ffn = cfg["intermediate_size"]
        check(
            "--ffn-hidden-size",
            dense_ffn,
            "intermediate_size",
            hf_ffn,
            dense_ffn,
            f"pass --ffn-hidden-size {hf_ffn}",
        )
    check(
        "--moe-shared-expert-gate",
        flags.moe_shared_expert_gate,
        "shared_expert_gate",
        False,
        bool(flags.moe_shared_expert_gate),
        "drop --moe-shared-expert-gate (the checkpoint has no shared-expert gate)",
    )
    return out


def check_moe_flags(
    flags: MoeFlags, cfg: dict[str, Any], dense_described: bool, dense_ffn: int | None
) -> list[Mismatch]:
    """Every MoE architecture flag that disagrees with ``cfg`` (a launch that describes the model,
    dense flags or MoE flags, must describe its experts too)."""
    if not (flags.described or dense_described):
        return []
    try:
        arch = moe_arch_from_hf_config(cfg)
    except ValueError as exc:
        return [Mismatch("--num-experts", flags.num_experts, "model_type", cfg.get("model_type"), str(exc))]
    if arch is None:
        if flags.num_experts and not is_moe_config(cfg):
            return [
                Mismatch(
                    "--num-experts",
                    flags.num_experts,
                    "num_experts",
                    None,
                    "drop the MoE flags: the checkpoint is a dense model",
                )
            ]
        return []  # a dense checkpoint, or experts of a family vime only trains with the torch backend
    return _arch_mismatches(flags, arch, cfg, dense_ffn)


def runtime_problem(flags: MoeFlags, backend: str) -> str | None:
    """The one-line refusal of a runtime MoE flag this backend cannot honour, or None."""
    if flags.moe_enable_deepep:
        return (
            "--moe-enable-deepep: DeepEP (and the flex dispatcher it drives) is not shipped with vime; "
            "drop it and use --moe-token-dispatcher-type alltoall"
        )
    if flags.use_rollout_routing_replay:
        return (
            "--use-rollout-routing-replay needs each token's routed experts from the engine: vLLM 0.32 (the CPU "
            "build) returns them only from its Model Runner V2, which needs Triton (--enable-return-routed-experts "
            "stops the engine at start), and vime's rollout does not carry them to the trainer; drop it"
        )
    if flags.use_routing_replay:
        return (
            "--use-routing-replay (record the routers' choices in the log-prob pass, replay them in training) is "
            "not built in vime yet (megatron-core 0.16.1's RouterReplay would do it); drop it"
        )
    if flags.moe_token_dispatcher_type == "flex":
        return (
            "--moe-token-dispatcher-type flex needs DeepEP or HybridEP, which vime does not ship; "
            "use alltoall (or allgather)"
        )
    types, coeffs = flags.load_balancing, flags.aux_loss_coeffs
    if len(types) != len(coeffs):
        return (
            f"--moe-aux-loss-coeff has {len(coeffs)} value(s) for {len(types)} --moe-router-load-balancing-type "
            "value(s): give one coefficient per type"
        )
    if "sinkhorn" in types:
        return (
            "--moe-router-load-balancing-type sinkhorn routes by Sinkhorn balancing, not by the checkpoint's "
            "top-k router, so trainer and engine would route differently; use aux_loss, seq_aux_loss or none"
        )
    if flags.moe_router_bias_update_rate is not None and flags.moe_router_bias_update_rate < 0:
        return f"--moe-router-bias-update-rate must be >= 0, got {flags.moe_router_bias_update_rate}"
    if backend == "torch":
        return _torch_problem(flags)
    return None


def _torch_problem(flags: MoeFlags) -> str | None:
    """The torch backend trains transformers' own MoE blocks: megatron-core's knobs have no meaning there."""
    megatron_only = (
        ("--moe-token-dispatcher-type", flags.moe_token_dispatcher_type),
        ("--moe-router-dtype", flags.moe_router_dtype),
        ("--moe-grouped-gemm", flags.moe_grouped_gemm),
        ("--moe-permute-fusion", flags.moe_permute_fusion),
    )
    for flag, value in megatron_only:
        if value is not None:
            return (
                f"{flag} chooses how megatron-core runs the experts; the torch backend runs transformers' own "
                "MoE blocks: drop it or use --train-backend megatron"
            )
    if flags.moe_router_bias_update_rate:
        return (
            f"--moe-router-bias-update-rate {flags.moe_router_bias_update_rate:g}: the torch backend keeps the "
            "expert bias fixed (transformers never updates it); use 0 or --train-backend megatron"
        )
    if flags.has_aux_loss:
        return (
            "--moe-aux-loss-coeff > 0: the torch backend adds no load-balancing loss; use 0 (slime's MoE recipes "
            "do) or --train-backend megatron"
        )
    return None


def expert_parallel_problem(
    num_experts: int | None, ep: int, etp: int, pp: int, training_gpus: int
) -> str | None:
    """Expert parallel sizes that the experts or this launch's training GPUs cannot take
    (megatron-core lays out expert-tensor x expert x expert-data parallel ranks in each pipeline stage)."""
    if num_experts is not None and num_experts % ep:
        return f"--expert-model-parallel-size {ep} does not divide the {num_experts} experts: use a divisor of it"
    if training_gpus % (ep * etp * pp):
        return (
            f"--expert-model-parallel-size {ep} x --expert-tensor-parallel-size {etp} x "
            f"--pipeline-model-parallel-size {pp} needs {ep * etp * pp} training GPUs (or a multiple); this "
            f"launch has {training_gpus} (--actor-num-nodes x --actor-num-gpus-per-node): lower the expert "
            "parallel sizes"
        )
    return None


def moe_problem(args: argparse.Namespace, visible_gpus: int | None = None) -> str | None:
    """The first MoE flag this launch cannot run with, as one line; None when all are fine.

    ``visible_gpus``: the GPUs of this machine when the training runs on it alone (one node).
    """
    from pathlib import Path

    from vime.utils.args.megatron_runtime import MegatronRuntime
    from vime.utils.args.model_arch import ModelArchFlags
    from vime.utils.args.model_check import mismatch_line, read_hf_config

    flags = MoeFlags.from_args(args)
    problem = runtime_problem(flags, args.train_backend)
    if problem:
        return problem
    arch = None
    checkpoint = args.hf_checkpoint
    if checkpoint is not None and (Path(checkpoint) / "config.json").is_file():
        cfg = read_hf_config(checkpoint)
        dense = ModelArchFlags.from_args(args)
        mismatches = check_moe_flags(flags, cfg, dense.described, dense.ffn_hidden_size)
        if mismatches:
            return mismatch_line(mismatches, checkpoint)
        arch = moe_arch_from_hf_config(cfg)
    if args.train_backend != "megatron":
        return None
    rt = MegatronRuntime.from_args(args)
    if flags.has_aux_loss and rt.pipeline_model_parallel_size > 1:
        return (
            "--moe-aux-loss-coeff > 0 with --pipeline-model-parallel-size > 1: megatron-core's pipeline schedule "
            "resets the load-balancing loss's scale that vime's token-normalised loss needs; use 0 or one stage"
        )
    etp = rt.expert_tensor_parallel_size or rt.tensor_model_parallel_size
    experts = arch.num_experts if arch is not None else flags.num_experts
    gpus = args.actor_num_nodes * args.actor_num_gpus_per_node
    problem = expert_parallel_problem(
        experts, rt.expert_model_parallel_size, etp, rt.pipeline_model_parallel_size, gpus
    )
    if problem:
        return problem
    needed = rt.expert_model_parallel_size * etp * rt.pipeline_model_parallel_size
    if args.actor_num_nodes == 1 and visible_gpus is not None and needed > 1 and visible_gpus < needed:
        return (
            f"--expert-model-parallel-size {rt.expert_model_parallel_size} x --expert-tensor-parallel-size {etp} "
            f"x --pipeline-model-parallel-size {rt.pipeline_model_parallel_size} needs {needed} GPUs and this "
            f"machine has {visible_gpus}: lower the expert parallel sizes (1 runs on one GPU)"
        )
    return None
