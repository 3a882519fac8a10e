"""Megatron-core mixture-of-experts models on the CPU against transformers' own forward.

Two families: Qwen3-MoE (softmax router over the top-k, no shared expert) and GLM-4.x-MoE (sigmoid
router with a score-correction bias, group-limited routing, a routed scaling factor, a shared
expert, a dense first layer, partial RoPE, q/k/v biases and q/k norms). Each small random HF model
is loaded into Megatron's local-spec MoE model (SequentialMLP experts, the allgather dispatcher:
megatron-core's alltoall dispatcher makes a CUDA stream when built) and must give transformers'
logits; exported back, it must give the very same tensors, which transformers loads and runs to the
same logits. The ``megatron_cpu`` fixture patches ``torch.cuda.current_device`` for this module only.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytest.importorskip("megatron.core")

from megatron_cpu_support import megatron_on_cpu

from tests.gloo_ranks import run_two_ranks

FAMILIES = ("qwen3_moe", "glm4_moe")


@pytest.fixture(scope="module")
def megatron_cpu():
    yield from megatron_on_cpu()


def hf_moe_model(dest: Path, family: str):
    """A random HF MoE model (3 layers, 8 experts, top-2), saved as safetensors in ``dest``.

    Routers and the expert bias get larger random values than the default init, so that tokens go
    to different experts and a wrong routing rule would show in the logits."""
    import transformers

    common = dict(
        vocab_size=389,
        hidden_size=64,
        intermediate_size=96,
        moe_intermediate_size=32,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        num_experts_per_tok=2,
        max_position_embeddings=256,
        tie_word_embeddings=False,
    )
    if family == "qwen3_moe":
        config = transformers.Qwen3MoeConfig(num_experts=8, norm_topk_prob=True, **common)
        cls = transformers.Qwen3MoeForCausalLM
    else:
        config = transformers.Glm4MoeConfig(
            n_routed_experts=8,
            n_shared_experts=1,
            first_k_dense_replace=1,
            n_group=2,
            topk_group=1,
            routed_scaling_factor=2.5,
            attention_bias=True,
            use_qk_norm=True,
            **common,
        )
        cls = transformers.Glm4MoeForCausalLM
    torch.manual_seed(0)
    model = cls(config).float().eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name:
                param.uniform_(0.5, 1.5)
            if name.endswith("mlp.gate.weight"):
                param.normal_(0.0, 0.5)
        for name, buffer in model.named_buffers():
            if name.endswith("e_score_correction_bias"):
                buffer.uniform_(-0.3, 0.3)
    model.save_pretrained(str(dest))
    return model


def megatron_model(hf_dir: Path):
    from vime.backends.megatron_utils.hf_config import load_shape
    from vime.backends.megatron_utils.hf_io import load_hf_into_megatron
    from vime.backends.megatron_utils.model_builder import ParallelSizes, build_gpt_model

    shape = load_shape(hf_dir)
    model = build_gpt_model(shape, ParallelSizes(), dtype=torch.float32, use_cpu_init=True).eval()
    load_hf_into_megatron(model, hf_dir, shape)
    return model, shape


def logits(model, ids: torch.Tensor) -> torch.Tensor:
    positions = torch.arange(ids.shape[1]).expand_as(ids)
    with torch.no_grad():
        return model(input_ids=ids, position_ids=positions, attention_mask=None)


IDS = torch.randint(0, 389, (3, 23), generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("family", FAMILIES)
def test_logits_match_transformers(megatron_cpu, tmp_path, family: str) -> None:
    hf = hf_moe_model(tmp_path / family, family)
    model, shape = megatron_model(tmp_path / family)
    assert shape.moe is not None and shape.moe.num_experts == 8
    assert shape.num_params() == sum(p.numel() for p in hf.parameters())
    expert = 3 * 64 * 32
    assert shape.num_params() - shape.active_params() == shape.moe.num_moe_layers * (8 - 2) * expert
    with torch.no_grad():
        ref = hf(input_ids=IDS).logits
    ours = logits(model, IDS)[..., : shape.vocab_size]
    assert (ours - ref).abs().max().item() < 1e-5, (ours - ref).abs().max().item()


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("zero_copy", [False, True], ids=["gathered", "zero_copy_views"])
def test_export_round_trip_gives_back_the_checkpoint(
    megatron_cpu, tmp_path, family: str, zero_copy: bool
) -> None:
    """HF -> Megatron -> HF through both export paths (several buckets): the same tensors, the expert
    bias included; transformers loads the export and computes the same logits."""
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from vime.backends.megatron_utils.buckets import plan_buckets
    from vime.backends.megatron_utils.hf_io import iter_hf_tensors, plan_hf_tensors, write_hf_config
    from vime.backends.megatron_utils.weight_export import WeightExporter, send_weights
    from vime.backends.megatron_utils.weight_sinks import DiskSink

    hf = hf_moe_model(tmp_path / "hf", family)
    model, shape = megatron_model(tmp_path / "hf")
    out = tmp_path / "export"
    if zero_copy:
        exporter = WeightExporter(model, shape, bucket_bytes=64_000, first_bucket_bytes=16_000)
        assert exporter.views is not None
        exporter.send(DiskSink(out), progress=False)
        exporter.send(DiskSink(out), progress=False)  # a second update (cached packer) replaces the first
    else:
        plan = plan_buckets(plan_hf_tensors(model, shape), bucket_bytes=64_000)
        send_weights(iter_hf_tensors(model, shape), plan, DiskSink(out), progress=False)
    write_hf_config(tmp_path / "hf", out)
    ref = load_file(str(tmp_path / "hf" / "model.safetensors"))
    files = sorted(out.glob("model-*.safetensors"))
    assert len(files) > 1  # several buckets
    got = {k: v for f in files for k, v in load_file(str(f)).items()}
    assert set(got) == set(ref)
    assert all(torch.equal(got[k], ref[k]) for k in ref), [k for k in ref if not torch.equal(got[k], ref[k])]
    experts = [k for k in got if ".mlp.experts." in k]
    assert len(experts) == (3 if family == "qwen3_moe" else 2) * 8 * 3
    reloaded = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32).eval()
    with torch.no_grad():
        assert torch.equal(reloaded(input_ids=IDS).logits, hf(input_ids=IDS).logits)


def test_routing_parts_change_the_logits(megatron_cpu, tmp_path) -> None:
    """Negative controls for the parity above: the expert bias, one router row and one expert's
    weights each move the logits (a mapping that dropped or swapped them would be caught)."""
    hf_moe_model(tmp_path / "glm", "glm4_moe")
    model, _ = megatron_model(tmp_path / "glm")
    layer = model.decoder.layers[1].mlp
    before = logits(model, IDS)
    with torch.no_grad():
        layer.router.expert_bias[3] += 0.3  # small: a large bias would pin every token to expert 3's group
    after_bias = logits(model, IDS)
    assert (after_bias - before).abs().max().item() > 1e-4
    with torch.no_grad():
        layer.router.weight[1] *= -1.0
    after_router = logits(model, IDS)
    assert (after_router - after_bias).abs().max().item() > 1e-4
    with torch.no_grad():
        a, b = (layer.experts.local_experts[i].linear_fc2.weight for i in (0, 1))
        tmp = a.clone()
        a.copy_(b)
        b.copy_(tmp)
    assert (logits(model, IDS) - after_router).abs().max().item() > 1e-4


def test_dense_first_layer_and_shared_expert_are_built(megatron_cpu, tmp_path) -> None:
    from megatron.core.transformer.mlp import MLP
    from megatron.core.transformer.moe.moe_layer import MoELayer

    hf_moe_model(tmp_path / "glm", "glm4_moe")
    model, shape = megatron_model(tmp_path / "glm")
    kinds = [type(layer.mlp) for layer in model.decoder.layers]
    assert kinds == [MLP, MoELayer, MoELayer]
    assert model.decoder.layers[1].mlp.shared_experts is not None
    assert shape.rotary_percent == 0.5 and shape.qkv_bias and shape.qk_layernorm


@pytest.mark.parametrize("family", FAMILIES)
def test_tools_convert_moe_checkpoints_both_ways(megatron_cpu, tmp_path, family: str) -> None:
    """tools/convert_hf_to_torch_dist.py then tools/convert_torch_dist_to_hf.py: the same tensors."""
    import importlib.util

    from safetensors.torch import load_file

    root = Path(__file__).resolve().parents[1]

    def tool(name: str):
        spec = importlib.util.spec_from_file_location(name, root / "tools" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    hf_moe_model(tmp_path / "hf", family)
    tool("convert_hf_to_torch_dist").convert(tmp_path / "hf", tmp_path / "ckpt")
    out = tool("convert_torch_dist_to_hf").convert(tmp_path / "ckpt", tmp_path / "hf", tmp_path / "back")
    ref = load_file(str(tmp_path / "hf" / "model.safetensors"))
    got = {k: v for f in out.glob("*.safetensors") for k, v in load_file(str(f)).items()}
    assert set(got) == set(ref)
    assert all(torch.equal(got[k], ref[k]) for k in ref)


@pytest.mark.slow
@pytest.mark.parametrize(
    "tp,ep,etp",
    [(1, 2, 1), (2, 2, 1), (2, 1, 2)],
    ids=["expert_parallel_2", "tp2_experts_split_by_ep", "tp2_experts_split_by_etp"],
)
def test_expert_parallel_layouts_on_two_processes(tmp_path, tp: int, ep: int, etp: int) -> None:
    """Two gloo ranks: experts spread by expert parallel (each rank loads its own experts, HF index
    r * 4 + e), or split inside by expert tensor parallel. Logits equal transformers' on each rank's
    own tokens, and the export (experts gathered across ranks) gives back the checkpoint."""
    from safetensors.torch import load_file

    family = "glm4_moe"
    hf = hf_moe_model(tmp_path / "hf", family)
    worker = Path(__file__).with_name("moe_parallel_worker.py")
    run_two_ranks(worker, str(tmp_path / "hf"), str(tmp_path), str(tp), str(ep), str(etp))
    for rank in range(2):
        saved = torch.load(tmp_path / f"logits{rank}.pt")
        with torch.no_grad():
            ref = hf(input_ids=saved["ids"]).logits
        width = saved["logits"].shape[-1]  # this tensor-parallel rank's slice of the padded vocabulary
        start = saved["tp_rank"] * width
        ref_slice = torch.nn.functional.pad(ref, (0, 512 - ref.shape[-1]))[..., start : start + width]
        assert (saved["logits"] - ref_slice).abs().max().item() < 1e-5, rank
    got = {k: v for f in (tmp_path / "export").glob("*.safetensors") for k, v in load_file(str(f)).items()}
    ref = load_file(str(tmp_path / "hf" / "model.safetensors"))
    assert set(got) == set(ref)
    assert all(torch.equal(got[k], ref[k]) for k in ref)


def _router_grads(hf_dir: Path, ids: torch.Tensor, aux_coeff: float, micro_batch_size: int) -> torch.Tensor:
    """The routers' weight gradients after one actor step whose policy loss is zero (advantages 0):
    what is left is the load-balancing loss."""
    from vime.algorithms import LossConfig
    from vime.backends.megatron_utils.actor import MegatronActor, MegatronActorConfig
    from vime.backends.megatron_utils.batch import PaddedBatch
    from vime.backends.megatron_utils.hf_config import load_shape
    from vime.backends.megatron_utils.model_builder import BuildOptions
    from vime.backends.megatron_utils.optimizer import OptimizerSettings
    from vime.utils.args.moe import MoeFlags

    cfg = MegatronActorConfig(
        shape=load_shape(hf_dir),
        dtype=torch.float32,
        micro_batch_size=micro_batch_size,
        optimizer=OptimizerSettings(clip_grad=1e12),
        loss=LossConfig(),
        hf_checkpoint=str(hf_dir),
        build=BuildOptions(moe=MoeFlags(moe_aux_loss_coeff=(aux_coeff,))),
    )
    actor = MegatronActor(cfg, optimizer_factory=lambda m: torch.optim.SGD(m.parameters(), lr=0.0))
    mask = torch.zeros(ids.shape)
    mask[:, 5:] = 1
    old = actor.compute_log_probs(PaddedBatch(ids, mask))
    actor.train_step(PaddedBatch(ids, mask, advantages=torch.zeros(ids.shape), old_log_probs=old))
    routers = [layer.mlp.router.weight.grad for layer in actor.model.decoder.layers]
    return torch.stack([g if g is not None else torch.zeros(8, 64) for g in routers])


def test_load_balancing_loss_is_a_token_weighted_mean(megatron_cpu, tmp_path) -> None:
    """--moe-aux-loss-coeff trains the routers (with a zero policy loss their gradient is the aux
    loss's), linearly in the coefficient, and as a mean over the step's tokens: every sample twice
    in one micro-batch gives the same gradient (Megatron's per-token multiplier divided back out)."""
    hf_moe_model(tmp_path / "q", "qwen3_moe")
    ids = torch.randint(0, 389, (2, 13), generator=torch.Generator().manual_seed(4))
    off = _router_grads(tmp_path / "q", ids, 0.0, 2)
    on = _router_grads(tmp_path / "q", ids, 0.01, 2)
    twice = _router_grads(tmp_path / "q", ids, 0.02, 2)
    doubled = _router_grads(tmp_path / "q", torch.cat([ids, ids]), 0.01, 4)
    assert off.abs().max().item() == 0.0 and on.abs().max().item() > 0
    torch.testing.assert_close(twice, 2 * on, rtol=1e-4, atol=1e-9)
    torch.testing.assert_close(doubled, on, rtol=1e-4, atol=1e-9)
