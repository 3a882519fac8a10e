"""The MoE flags of slime's model scripts: parsed, checked against config.json, refused in one line.

The configs are the published ``config.json`` fields of Qwen3-30B-A3B and GLM-4.5-355B-A32B (the
fields vime reads), and the flags are those of slime's ``scripts/models/qwen3-30B-A3B.sh`` and
``glm4.5-355B-A32B.sh`` at #2298, written out here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vime.utils.args.moe import (
    MoeFlags,
    check_moe_flags,
    expert_parallel_problem,
    moe_problem,
    runtime_problem,
)
from vime.utils.arguments import build_parser
from vime.utils.moe_arch import moe_arch_from_hf_config

QWEN3_30B_A3B = {
    "model_type": "qwen3_moe",
    "num_hidden_layers": 48,
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "norm_topk_prob": True,
    "vocab_size": 151936,
    "rms_norm_eps": 1e-6,
    "rope_theta": 1000000.0,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
    "attention_bias": False,
}
GLM45_355B = {
    "model_type": "glm4_moe",
    "num_hidden_layers": 92,
    "hidden_size": 5120,
    "intermediate_size": 12288,
    "moe_intermediate_size": 1536,
    "num_attention_heads": 96,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "n_routed_experts": 160,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "norm_topk_prob": True,
    "routed_scaling_factor": 2.5,
    "n_group": 1,
    "topk_group": 1,
    "partial_rotary_factor": 0.5,
    "attention_bias": True,
    "use_qk_norm": True,
    "vocab_size": 151552,
    "rms_norm_eps": 1e-5,
    "rope_theta": 1000000.0,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
}
# slime's scripts/models/qwen3-30B-A3B.sh builds "[1,1,...]" (48 ones) with printf
QWEN3_MOE_FLAGS = [
    "--moe-ffn-hidden-size", "768", "--moe-router-score-function", "softmax",
    "--moe-token-dispatcher-type", "alltoall", "--moe-router-topk", "8",
    "--moe-layer-freq", "[" + ",".join(["1"] * 48) + "]", "--num-experts", "128", "--moe-grouped-gemm",
    "--moe-token-drop-policy", "probs", "--moe-router-dtype", "fp32", "--moe-permute-fusion",
    "--moe-aux-loss-coeff", "0",
]  # fmt: skip
GLM45_MOE_FLAGS = [
    "--moe-ffn-hidden-size", "1536", "--moe-shared-expert-intermediate-size", "1536",
    "--moe-router-pre-softmax", "--moe-router-score-function", "sigmoid", "--moe-router-enable-expert-bias",
    "--moe-router-bias-update-rate", "0", "--moe-router-load-balancing-type", "seq_aux_loss",
    "--moe-token-dispatcher-type", "alltoall", "--moe-router-topk", "8", "--moe-router-topk-scaling-factor", "2.5",
    "--moe-layer-freq", "[0]*3+[1]*89", "--num-experts", "160", "--moe-grouped-gemm", "--moe-router-dtype", "fp32",
    "--moe-permute-fusion", "--moe-aux-loss-coeff", "0",
]  # fmt: skip


def _args(checkpoint: Path | None, *flags: str, backend: str = "megatron", gpus: int = 1):
    """vime's own parser (without the generated --vllm-* layer) over these flags."""
    argv = ["--train-backend", backend, "--actor-num-gpus-per-node", str(gpus), *flags]
    if checkpoint is not None:
        argv += ["--hf-checkpoint", str(checkpoint)]
    return build_parser(engine_layer=False).parse_args(argv)


def _checkpoint(tmp_path: Path, cfg: dict) -> Path:
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return tmp_path


@pytest.mark.parametrize("cfg,flags", [(QWEN3_30B_A3B, QWEN3_MOE_FLAGS), (GLM45_355B, GLM45_MOE_FLAGS)])
def test_slime_model_scripts_match_their_checkpoints(tmp_path, cfg, flags) -> None:
    args = _args(_checkpoint(tmp_path, cfg), *flags)
    assert moe_problem(args) is None
    moe = MoeFlags.from_args(args)
    assert moe.dispatcher == "alltoall" and moe.moe_router_dtype == "fp32"


def test_arch_from_config_reads_both_families() -> None:
    qwen = moe_arch_from_hf_config(QWEN3_30B_A3B)
    assert (
        qwen.layer_pattern == (1,) * 48
        and not qwen.pre_softmax
        and qwen.shared_expert_intermediate_size is None
    )
    total, active = qwen.mlp_params(2048, 6144)
    assert (total, active) == (
        48 * (128 * 2048 + 128 * 3 * 2048 * 768),
        48 * (128 * 2048 + 8 * 3 * 2048 * 768),
    )
    glm = moe_arch_from_hf_config(GLM45_355B)
    assert glm.layer_pattern == (0, 0, 0) + (1,) * 89 and glm.expert_bias and glm.topk_scaling_factor == 2.5
    assert glm.shared_expert_intermediate_size == 1536 and glm.num_groups is None


@pytest.mark.parametrize(
    "change,flag,fragment",
    [
        (("--num-experts", "64"), "--num-experts", "num_experts=128"),
        (("--moe-router-topk", "4"), "--moe-router-topk", "num_experts_per_tok=8"),
        (("--moe-ffn-hidden-size", "512"), "--moe-ffn-hidden-size", "moe_intermediate_size=768"),
        (("--moe-layer-freq", "[0]*1+[1]*47"), "--moe-layer-freq", "pass --moe-layer-freq [1]*48"),
        (("--moe-router-pre-softmax",), "--moe-router-pre-softmax", "norm_topk_prob=True"),
        (("--moe-router-score-function", "sigmoid"), "--moe-router-score-function", "'softmax'"),
        (
            ("--moe-shared-expert-intermediate-size", "768"),
            "--moe-shared-expert-intermediate-size",
            "no shared",
        ),
    ],
)
def test_a_flag_that_disagrees_with_the_checkpoint_is_one_line(tmp_path, change, flag, fragment) -> None:
    flags = list(QWEN3_MOE_FLAGS)
    if change[0] in flags and len(change) == 2:
        flags[flags.index(change[0]) + 1] = change[1]
    else:
        flags += list(change)
    line = moe_problem(_args(_checkpoint(tmp_path, QWEN3_30B_A3B), *flags))
    assert line is not None and "\n" not in line
    assert line.startswith(flag) and fragment in line, line
    assert "--hf-checkpoint" in line


def test_glm_switches_left_out_are_mismatches(tmp_path) -> None:
    """Once the launch describes the experts, a missing switch means off (Megatron's meaning)."""
    flags = [f for f in GLM45_MOE_FLAGS if f != "--moe-router-enable-expert-bias"]
    line = moe_problem(_args(_checkpoint(tmp_path, GLM45_355B), *flags))
    assert (
        line.startswith("--moe-router-enable-expert-bias (not given)")
        and "add --moe-router-enable-expert-bias" in line
    )
    scaled = list(GLM45_MOE_FLAGS)
    scaled[scaled.index("--moe-router-topk-scaling-factor") + 1] = "1.8"
    assert "routed_scaling_factor=2.5" in moe_problem(_args(_checkpoint(tmp_path, GLM45_355B), *scaled))


def test_dense_flags_for_a_moe_checkpoint_miss_the_experts(tmp_path) -> None:
    line = moe_problem(_args(_checkpoint(tmp_path, QWEN3_30B_A3B), "--num-layers", "48"))
    assert line.startswith("--num-experts (not given)") and "pass --num-experts 128" in line


def test_moe_flags_on_a_dense_checkpoint(tmp_path) -> None:
    dense = {k: v for k, v in QWEN3_30B_A3B.items() if "expert" not in k and k != "moe_intermediate_size"}
    line = moe_problem(_args(_checkpoint(tmp_path, dense | {"model_type": "qwen3"}), "--num-experts", "8"))
    assert "the checkpoint is a dense model" in line


def test_no_flags_read_everything_from_the_checkpoint(tmp_path) -> None:
    assert check_moe_flags(MoeFlags(), QWEN3_30B_A3B, dense_described=False, dense_ffn=None) == []
    assert moe_problem(_args(_checkpoint(tmp_path, GLM45_355B))) is None


def test_layer_freq_is_parsed_without_eval() -> None:
    assert _args(None, "--moe-layer-freq", "([1]*3+[0])*2").moe_layer_freq == [1, 1, 1, 0, 1, 1, 1, 0]
    assert _args(None, "--moe-layer-freq", "2").moe_layer_freq == 2
    with pytest.raises(SystemExit):
        _args(None, "--moe-layer-freq", "__import__('os').getcwd()")


@pytest.mark.parametrize(
    "flags,fragment",
    [
        (["--moe-enable-deepep"], "DeepEP (and the flex dispatcher it drives) is not shipped"),
        (["--moe-token-dispatcher-type", "flex"], "needs DeepEP or HybridEP"),
        (["--use-rollout-routing-replay"], "Model Runner V2, which needs Triton"),
        (["--use-routing-replay"], "not built in vime yet"),
        (["--moe-router-load-balancing-type", "sinkhorn"], "routes by Sinkhorn balancing"),
        (
            ["--moe-router-load-balancing-type", "aux_loss", "seq_aux_loss", "--moe-aux-loss-coeff", "0.1"],
            "1 value(s) for 2",
        ),
    ],
)
def test_runtime_flags_megatron_cannot_run_are_refused(flags, fragment) -> None:
    line = runtime_problem(MoeFlags.from_args(_args(None, *flags)), "megatron")
    assert line is not None and fragment in line and "\n" not in line


@pytest.mark.parametrize(
    "flags,fragment",
    [
        (
            ["--moe-token-dispatcher-type", "alltoall"],
            "--moe-token-dispatcher-type chooses how megatron-core",
        ),
        (["--moe-grouped-gemm"], "--moe-grouped-gemm chooses how megatron-core"),
        (["--moe-router-dtype", "fp32"], "--moe-router-dtype chooses"),
        (["--moe-router-bias-update-rate", "0.001"], "keeps the expert bias fixed"),
        (["--moe-aux-loss-coeff", "0.01"], "adds no load-balancing loss"),
    ],
)
def test_torch_backend_refuses_megatron_only_knobs(flags, fragment) -> None:
    line = runtime_problem(MoeFlags.from_args(_args(None, *flags, backend="torch")), "torch")
    assert line is not None and fragment in line


def test_torch_backend_takes_what_it_honours() -> None:
    args = _args(None, "--moe-router-bias-update-rate", "0", "--moe-aux-loss-coeff", "0", backend="torch")
    assert runtime_problem(MoeFlags.from_args(args), "torch") is None


def test_expert_parallel_sizes_against_experts_and_gpus(tmp_path) -> None:
    assert expert_parallel_problem(128, 8, 1, 1, 8) is None
    assert "does not divide the 128 experts" in expert_parallel_problem(128, 3, 1, 1, 3)
    line = expert_parallel_problem(128, 8, 1, 1, 1)
    assert "needs 8 training GPUs" in line and "this launch has 1" in line
    ckpt = _checkpoint(tmp_path, QWEN3_30B_A3B)
    args = _args(ckpt, "--expert-model-parallel-size", "8", gpus=8)
    assert moe_problem(args, visible_gpus=8) is None
    line = moe_problem(args, visible_gpus=1)
    assert "needs 8 GPUs and this machine has 1" in line and "1 runs on one GPU" in line


def test_aux_loss_with_pipeline_stages_is_refused(tmp_path) -> None:
    args = _args(None, "--moe-aux-loss-coeff", "0.01", "--pipeline-model-parallel-size", "2", gpus=2)
    assert "resets the load-balancing loss's scale" in moe_problem(args)


def test_runtime_flags_reach_megatron_core_config() -> None:
    """Each runtime flag lands in the TransformerConfig field megatron-core reads; the two kernels this
    install lacks are off (SequentialMLP, unfused permutation) and named by the fallback warnings."""
    from vime.backends.megatron_utils.moe_config import fallbacks, moe_transformer_kwargs

    flags = MoeFlags.from_args(
        _args(
            None,
            "--moe-token-dispatcher-type", "alltoall", "--moe-router-dtype", "fp64",
            "--moe-router-bias-update-rate", "0", "--moe-token-drop-policy", "position",
            "--moe-router-load-balancing-type", "aux_loss", "seq_aux_loss", "--moe-aux-loss-coeff", "0.01", "0.02",
            "--moe-grouped-gemm", "--moe-permute-fusion",
        )
    )  # fmt: skip
    fields = moe_transformer_kwargs(moe_arch_from_hf_config(GLM45_355B), flags, 8, 1)
    assert fields["moe_token_dispatcher_type"] == "alltoall" and fields["moe_router_dtype"] == "fp64"
    assert fields["moe_router_bias_update_rate"] == 0.0 and fields["moe_token_drop_policy"] == "position"
    assert fields["moe_router_load_balancing_type"] == ["aux_loss", "seq_aux_loss"]
    assert fields["moe_aux_loss_coeff"] == [0.01, 0.02]
    assert fields["expert_model_parallel_size"] == 8 and fields["expert_tensor_parallel_size"] == 1
    assert (
        fields["moe_layer_freq"] == [0, 0, 0] + [1] * 89 and fields["moe_router_topk_scaling_factor"] == 2.5
    )
    assert not fields["moe_grouped_gemm"] and not fields["moe_permute_fusion"]
    assert [line.split(":")[0] for line in fallbacks(flags)] == ["--moe-grouped-gemm", "--moe-permute-fusion"]
    defaults = moe_transformer_kwargs(moe_arch_from_hf_config(QWEN3_30B_A3B), MoeFlags())
    assert (
        defaults["moe_token_dispatcher_type"] == "allgather"
        and defaults["moe_router_bias_update_rate"] == 1e-3
    )
