"""HF <-> Megatron weight mapping and bucket packing: pure tensor round trips, no process group."""

from __future__ import annotations

import pytest
import torch

from vime.backends.megatron_utils.buckets import bucket_nbytes, pack_into, plan_buckets, specs_of, unpack
from vime.backends.megatron_utils.hf_config import ModelShape, padded_vocab_size, shape_from_hf_config
from vime.backends.megatron_utils.weight_mapping import Split, rule_for, to_hf, to_megatron_shard


def _shape(family: str, tie: bool) -> ModelShape:
    return ModelShape(
        family=family,
        num_layers=2,
        hidden_size=64,
        ffn_hidden_size=96,
        num_attention_heads=8,
        num_query_groups=4,
        head_dim=16,
        vocab_size=301,
        max_position_embeddings=128,
        rms_norm_eps=1e-6,
        rope_theta=10000.0,
        qkv_bias=family == "qwen2",
        qk_layernorm=family == "qwen3",
        tie_word_embeddings=tie,
    )


def _megatron_names(shape: ModelShape) -> list[str]:
    names = ["embedding.word_embeddings.weight", "decoder.final_layernorm.weight", "output_layer.weight"]
    for i in range(shape.num_layers):
        names += [
            f"decoder.layers.{i}.{s}"
            for s in (
                "input_layernorm.weight",
                "self_attention.linear_qkv.weight",
                "self_attention.linear_proj.weight",
                "pre_mlp_layernorm.weight",
                "mlp.linear_fc1.weight",
                "mlp.linear_fc2.weight",
            )
        ]
        if shape.qkv_bias:
            names.append(f"decoder.layers.{i}.self_attention.linear_qkv.bias")
        if shape.qk_layernorm:
            names += [f"decoder.layers.{i}.self_attention.{n}_layernorm.weight" for n in ("q", "k")]
    return names


def _hf_tensor(name: str, shape: ModelShape) -> torch.Tensor:
    h, hd = shape.hidden_size, shape.head_dim
    q, kv = shape.num_attention_heads * hd, shape.num_query_groups * hd
    sizes = {
        "embed_tokens": (shape.vocab_size, h),
        "lm_head": (shape.vocab_size, h),
        "q_proj.weight": (q, h),
        "k_proj.weight": (kv, h),
        "v_proj.weight": (kv, h),
        "q_proj.bias": (q,),
        "k_proj.bias": (kv,),
        "v_proj.bias": (kv,),
        "o_proj": (h, q),
        "gate_proj": (shape.ffn_hidden_size, h),
        "up_proj": (shape.ffn_hidden_size, h),
        "down_proj": (h, shape.ffn_hidden_size),
        "q_norm": (hd,),
        "k_norm": (hd,),
        "layernorm": (h,),
        "model.norm": (h,),
    }
    for key, size in sizes.items():
        if key in name:
            return torch.randn(size)
    raise KeyError(name)


@pytest.mark.parametrize("family,tie", [("qwen2", False), ("qwen3", True), ("llama", False)])
@pytest.mark.parametrize("tp", [1, 2, 4])
def test_hf_to_megatron_shards_and_back_is_exact(family: str, tie: bool, tp: int) -> None:
    shape = _shape(family, tie)
    padded = padded_vocab_size(shape.vocab_size, tp)
    hf: dict[str, torch.Tensor] = {}
    rebuilt: dict[str, torch.Tensor] = {}
    for name in _megatron_names(shape):
        rule = rule_for(name, shape)
        for n in rule.hf_names:
            hf.setdefault(n, _hf_tensor(n, shape))
        shards = [
            to_megatron_shard(rule, [hf[n] for n in rule.hf_names], shape, r, tp, padded) for r in range(tp)
        ]
        assert len({s.shape for s in shards}) == 1, f"{name}: unequal shards"
        if rule.split is Split.VOCAB:
            assert shards[0].shape[0] * tp == padded  # the padded vocabulary, cut in equal slices
        rebuilt.update(to_hf(rule, shards, shape))
    assert set(rebuilt) == set(hf)
    for n, t in hf.items():
        assert torch.equal(rebuilt[n], t), n  # padding removed, layout restored


def test_qkv_layout_interleaves_query_groups() -> None:
    """Megatron keeps each query group's q heads next to its k and v: check one group's rows."""
    shape = _shape("llama", False)
    hd, per_group = shape.head_dim, shape.num_attention_heads // shape.num_query_groups
    rule = rule_for("decoder.layers.1.self_attention.linear_qkv.weight", shape)
    assert rule.hf_names[0] == "model.layers.1.self_attn.q_proj.weight"
    q, k, v = (_hf_tensor(n, shape) for n in rule.hf_names)
    packed = to_megatron_shard(rule, [q, k, v], shape, 0, 1, 0)
    group1 = packed[(per_group + 2) * hd : 2 * (per_group + 2) * hd]
    assert torch.equal(group1[: per_group * hd], q[per_group * hd : 2 * per_group * hd])
    assert torch.equal(group1[per_group * hd : (per_group + 1) * hd], k[hd : 2 * hd])
    assert torch.equal(group1[(per_group + 1) * hd :], v[hd : 2 * hd])


def test_layer_offset_and_unknown_names() -> None:
    shape = _shape("qwen2", False)
    assert rule_for("decoder.layers.0.mlp.linear_fc2.weight", shape, layer_offset=5).hf_names == (
        "model.layers.5.mlp.down_proj.weight",
    )
    with pytest.raises(KeyError, match="no HF mapping"):
        rule_for("decoder.layers.0.mlp.experts.weight1", shape)  # grouped-GEMM experts: not built


def test_shape_from_config_rejects_other_families() -> None:
    with pytest.raises(ValueError, match="not supported by the Megatron backend"):
        shape_from_hf_config({"model_type": "gpt2"})
    s = shape_from_hf_config(
        {
            "model_type": "llama",
            "num_hidden_layers": 2,
            "hidden_size": 64,
            "intermediate_size": 96,
            "num_attention_heads": 4,
            "vocab_size": 10,
            "rope_parameters": {"rope_type": "llama3", "factor": 8.0, "rope_theta": 5e5},
        }
    )
    assert (s.head_dim, s.num_query_groups, s.rope_theta, s.rope_scaling_factor, s.qkv_bias) == (
        16,
        4,
        5e5,
        8.0,
        False,
    )


def test_buckets_respect_size_and_round_trip() -> None:
    tensors = [
        (f"t{i}", torch.randn(i + 1, 33).to(torch.bfloat16 if i % 2 else torch.float32)) for i in range(20)
    ]
    buckets = plan_buckets(specs_of(tensors), bucket_bytes=2048)
    assert len(buckets) > 1
    assert all(bucket_nbytes(b) <= 2048 or len(b) == 1 for b in buckets)
    out, source = [], iter(t for _, t in tensors)
    for b in buckets:
        flat = pack_into(torch.full((4096,), 255, dtype=torch.uint8), b, [next(source) for _ in b])
        out += unpack(flat.clone(), b)
    assert [n for n, _ in out] == [n for n, _ in tensors]
    for (_, a), (_, b) in zip(out, tensors, strict=True):
        assert a.dtype == b.dtype and torch.equal(a, b)


def test_pack_refuses_a_tensor_that_does_not_match_the_plan() -> None:
    plan = plan_buckets([("a", torch.float32, (2, 3))], bucket_bytes=1024)
    with pytest.raises(RuntimeError, match="a: planned"):
        pack_into(torch.empty(1024, dtype=torch.uint8), plan[0], [torch.zeros(3, 3)])
    with pytest.raises(RuntimeError, match="a: planned"):
        pack_into(torch.empty(1024, dtype=torch.uint8), plan[0], [torch.zeros(2, 3, dtype=torch.bfloat16)])


def test_first_bucket_can_be_smaller() -> None:
    specs = [(f"t{i}", torch.float32, (64,)) for i in range(32)]  # 256 bytes each
    plan = plan_buckets(specs, bucket_bytes=2048, first_bucket_bytes=512)
    assert [len(b) for b in plan] == [2, 8, 8, 8, 6]


def test_cached_packer_equals_pack_into_and_sees_updated_sources() -> None:
    """The fused per-bucket copy writes the same bytes as the per-tensor packing, update after update
    (the sources are the live parameters; the second call reuses the destination views)."""
    from vime.backends.megatron_utils.buckets import CachedPacker

    tensors = [torch.randn(i + 1, 5).to(torch.bfloat16 if i % 3 else torch.float32) for i in range(12)]
    tensors.append(torch.randn(2, 3, 4))  # a strided-shaped source (like q/k/v views) of a (6, 4) tensor
    specs = [(f"t{i}", t.dtype, tuple(t.shape)) for i, t in enumerate(tensors[:-1])]
    plan = plan_buckets([*specs, ("qkv", torch.float32, (6, 4))], bucket_bytes=200)
    packer, buffers = CachedPacker(), [torch.empty(4096, dtype=torch.uint8) for _ in plan]
    for update in range(3):
        source = iter(tensors)
        for i, bucket in enumerate(plan):
            batch = [next(source) for _ in bucket]
            got = unpack(packer.pack(i, buffers[i], bucket, batch).clone(), bucket)
            want = unpack(pack_into(torch.zeros(4096, dtype=torch.uint8), bucket, batch), bucket)
            assert all(torch.equal(a, b) for (_, a), (_, b) in zip(got, want, strict=True)), (update, i)
        for t in tensors:
            t.add_(1.0)  # the optimizer step between updates
    assert len(packer._dests) == len(plan)  # views made once per bucket
