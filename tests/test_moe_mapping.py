"""Mixture-of-experts weight names: Megatron's local-spec MoE layer <-> Hugging Face's per-expert tensors.

Pure tensor functions (no process group): a routed expert's shards across expert tensor parallel,
its global index across expert parallel, the router and its expert bias, the shared experts.
"""

from __future__ import annotations

import pytest
import torch

from vime.backends.megatron_utils.hf_config import ModelShape
from vime.backends.megatron_utils.weight_mapping import Split, rule_for, to_hf, to_megatron_shard

SHAPE = ModelShape(
    family="glm4_moe",
    num_layers=3,
    hidden_size=64,
    ffn_hidden_size=96,
    num_attention_heads=4,
    num_query_groups=2,
    head_dim=16,
    vocab_size=301,
    max_position_embeddings=128,
    rms_norm_eps=1e-6,
    rope_theta=10000.0,
    qkv_bias=True,
    qk_layernorm=False,
    tie_word_embeddings=False,
)


def test_expert_names_carry_the_global_expert_index() -> None:
    """Local expert 3 of expert-parallel rank 2 (8 local experts each) is HF expert 19."""
    rule = rule_for(
        "decoder.layers.0.mlp.experts.local_experts.3.linear_fc1.weight", SHAPE, 4, expert_offset=16
    )
    assert rule.expert and rule.split is Split.GATE_UP
    assert rule.hf_names == (
        "model.layers.4.mlp.experts.19.gate_proj.weight",
        "model.layers.4.mlp.experts.19.up_proj.weight",
    )
    down = rule_for("decoder.layers.1.mlp.experts.local_experts.0.linear_fc2.weight", SHAPE)
    assert down.hf_names == ("model.layers.1.mlp.experts.0.down_proj.weight",) and down.split is Split.ROW


@pytest.mark.parametrize(
    "megatron,hf,split,expert",
    [
        ("mlp.router.weight", ("mlp.gate.weight",), Split.REPLICATED, False),
        ("mlp.router.expert_bias", ("mlp.gate.e_score_correction_bias",), Split.REPLICATED, False),
        (
            "mlp.shared_experts.linear_fc1.weight",
            ("mlp.shared_experts.gate_proj.weight", "mlp.shared_experts.up_proj.weight"),
            Split.GATE_UP,
            False,
        ),
        ("mlp.shared_experts.linear_fc2.weight", ("mlp.shared_experts.down_proj.weight",), Split.ROW, False),
    ],
)
def test_router_and_shared_expert_rules(
    megatron: str, hf: tuple[str, ...], split: Split, expert: bool
) -> None:
    rule = rule_for(f"decoder.layers.2.{megatron}", SHAPE)
    assert rule.hf_names == tuple(f"model.layers.2.{n}" for n in hf)
    assert rule.split is split and rule.expert is expert


@pytest.mark.parametrize("etp", [1, 2, 4])
def test_expert_shards_round_trip_across_expert_tensor_parallel(etp: int) -> None:
    moe_ffn, h = 32, SHAPE.hidden_size
    gate, up, down = torch.randn(moe_ffn, h), torch.randn(moe_ffn, h), torch.randn(h, moe_ffn)
    fc1 = rule_for("decoder.layers.0.mlp.experts.local_experts.1.linear_fc1.weight", SHAPE)
    fc2 = rule_for("decoder.layers.0.mlp.experts.local_experts.1.linear_fc2.weight", SHAPE)
    fc1_shards = [to_megatron_shard(fc1, [gate, up], SHAPE, r, etp, 0) for r in range(etp)]
    fc2_shards = [to_megatron_shard(fc2, [down], SHAPE, r, etp, 0) for r in range(etp)]
    assert fc1_shards[0].shape == (2 * moe_ffn // etp, h)  # each rank: its slice of gate, then of up
    assert torch.equal(fc1_shards[0][: moe_ffn // etp], gate[: moe_ffn // etp])
    rebuilt = dict(to_hf(fc1, fc1_shards, SHAPE) + to_hf(fc2, fc2_shards, SHAPE))
    assert torch.equal(rebuilt["model.layers.0.mlp.experts.1.gate_proj.weight"], gate)
    assert torch.equal(rebuilt["model.layers.0.mlp.experts.1.up_proj.weight"], up)
    assert torch.equal(rebuilt["model.layers.0.mlp.experts.1.down_proj.weight"], down)


def test_grouped_gemm_experts_have_no_rule() -> None:
    """vime builds SequentialMLP experts; grouped-GEMM weights would need their own rule."""
    with pytest.raises(KeyError, match="no HF mapping"):
        rule_for("decoder.layers.0.mlp.experts.weight1", SHAPE)
