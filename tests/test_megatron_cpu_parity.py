"""The Megatron-core model on the CPU against the HF model on the same weights.

Megatron-core 0.16.1 runs forward and backward on the CPU only with ``torch.cuda.current_device``
patched (it places tensors on "the current CUDA device"), and its optimizer is CUDA-only: the
``megatron_cpu`` fixture patches that function for this module only and the training test passes a
plain torch optimizer. The library itself never patches anything.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytest.importorskip("megatron.core")

from megatron_cpu_support import megatron_on_cpu


@pytest.fixture(scope="module")
def megatron_cpu():
    yield from megatron_on_cpu()


def _hf_model(dest: Path, family: str, tie: bool) -> Path:
    """A random HF model of one family (GQA, 3 layers), saved as safetensors in ``dest``."""
    import transformers

    common = dict(
        vocab_size=389,
        hidden_size=128,
        intermediate_size=192,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        max_position_embeddings=256,
        tie_word_embeddings=tie,
    )
    cls = {
        "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM),
        "qwen3": (transformers.Qwen3Config, transformers.Qwen3ForCausalLM),
        "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
    }[family]
    torch.manual_seed(0)
    model = cls[1](cls[0](**common)).float()
    with torch.no_grad():  # norms start at 1.0: make them differ so a swapped norm would show
        for n, p in model.named_parameters():
            if "norm" in n:
                p.uniform_(0.5, 1.5)
    model.save_pretrained(str(dest))
    return dest


def _megatron(hf_dir: Path):
    from vime.backends.megatron_utils.hf_config import load_shape
    from vime.backends.megatron_utils.hf_io import load_hf_into_megatron
    from vime.backends.megatron_utils.model_builder import ParallelSizes, build_gpt_model

    shape = load_shape(hf_dir)
    model = build_gpt_model(shape, ParallelSizes(), dtype=torch.float32, use_cpu_init=True).eval()
    load_hf_into_megatron(model, hf_dir, shape)
    return model, shape


def _logits(model, ids: torch.Tensor) -> torch.Tensor:
    pos = torch.arange(ids.shape[1]).expand_as(ids)
    with torch.no_grad():
        return model(input_ids=ids, position_ids=pos, attention_mask=None)


@pytest.mark.parametrize("family,tie", [("qwen2", False), ("qwen3", True), ("llama", True)])
def test_logits_and_logprobs_match_hf(megatron_cpu, tmp_path, family: str, tie: bool) -> None:
    from transformers import AutoModelForCausalLM

    from vime.backends.megatron_utils.logprobs import token_logprobs_from_logits

    hf_dir = _hf_model(tmp_path / family, family, tie)
    model, shape = _megatron(hf_dir)
    hf = AutoModelForCausalLM.from_pretrained(str(hf_dir), dtype=torch.float32).eval()
    ids = torch.randint(0, shape.vocab_size, (3, 29), generator=torch.Generator().manual_seed(1))
    ours = _logits(model, ids)
    with torch.no_grad():
        ref = hf(input_ids=ids).logits
    assert ours.shape[-1] == 512  # padded to a multiple of 128
    assert (ours[..., : shape.vocab_size] - ref).abs().max().item() < 1e-5

    lp, ent = token_logprobs_from_logits(ours, ids, shape.vocab_size)
    ref_lp = torch.log_softmax(ref[:, :-1], -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    ref_p = torch.softmax(ref[:, :-1], -1)
    ref_ent = -(ref_p * torch.log(ref_p)).sum(-1)
    assert (lp[:, 1:] - ref_lp).abs().max().item() < 1e-5  # the padding rows do not leak in
    assert (ent[:, 1:] - ref_ent).abs().max().item() < 1e-5


def test_perturbed_weight_breaks_parity(megatron_cpu, tmp_path) -> None:
    """Negative control: the parity check above can fail (one changed qkv element moves the logits)."""
    hf_dir = _hf_model(tmp_path / "q", "qwen2", False)
    model, shape = _megatron(hf_dir)
    ids = torch.randint(0, shape.vocab_size, (1, 17))
    before = _logits(model, ids)
    with torch.no_grad():
        model.decoder.layers[0].self_attention.linear_qkv.weight[5, 3] += 0.5
    assert (_logits(model, ids) - before).abs().max().item() > 1e-4


@pytest.mark.parametrize("zero_copy", [False, True], ids=["gathered", "zero_copy_views"])
def test_exported_weights_equal_hf_state_dict(megatron_cpu, tmp_path, zero_copy: bool) -> None:
    """Both export paths (the general gather path and the cached zero-copy views used at tensor
    parallel 1) write exactly the HF tensors, in several buckets, without the vocabulary padding."""
    from safetensors.torch import load_file

    from vime.backends.megatron_utils.buckets import plan_buckets
    from vime.backends.megatron_utils.hf_io import iter_hf_tensors, plan_hf_tensors
    from vime.backends.megatron_utils.weight_export import WeightExporter, send_weights
    from vime.backends.megatron_utils.weight_sinks import DiskSink

    hf_dir = _hf_model(tmp_path / "l", "llama", True)
    model, shape = _megatron(hf_dir)
    out = tmp_path / "export"
    if zero_copy:
        exporter = WeightExporter(model, shape, bucket_bytes=200_000, first_bucket_bytes=50_000)
        assert exporter.views is not None
        sent = exporter.send(DiskSink(out), progress=False)
        sent = exporter.send(DiskSink(out), progress=False)  # a second update replaces the first
    else:
        plan = plan_buckets(plan_hf_tensors(model, shape), bucket_bytes=200_000)
        sent = send_weights(iter_hf_tensors(model, shape), plan, DiskSink(out), progress=False)
    ref = load_file(str(hf_dir / "model.safetensors"))
    files = sorted(out.glob("model-*.safetensors"))
    assert len(files) > 1  # several buckets
    got = {k: v for f in files for k, v in load_file(str(f)).items()}
    assert "lm_head.weight" not in got  # tied: exported once, as the embedding
    assert set(got) == set(ref) - {"lm_head.weight"}
    assert all(torch.equal(got[k], ref[k]) for k in got)
    assert got["model.embed_tokens.weight"].shape[0] == shape.vocab_size  # padding removed
    assert sent >= sum(t.numel() * 4 for t in got.values())


def test_train_step_with_torch_optimizer_moves_logprobs(megatron_cpu, tiny_model_dir) -> None:
    """One actor step (actor_loss of vime.algorithms, Megatron's forward/backward schedule) on the CPU:
    tokens with positive advantage become more likely, negative ones less."""
    from vime.algorithms import LossConfig
    from vime.backends.megatron_utils.actor import MegatronActor, MegatronActorConfig
    from vime.backends.megatron_utils.batch import PaddedBatch
    from vime.backends.megatron_utils.hf_config import load_shape
    from vime.backends.megatron_utils.optimizer import OptimizerSettings

    cfg = MegatronActorConfig(
        shape=load_shape(tiny_model_dir),
        dtype=torch.float32,
        micro_batch_size=2,
        optimizer=OptimizerSettings(lr=1e-2),
        loss=LossConfig(),
        hf_checkpoint=str(tiny_model_dir),
    )
    actor = MegatronActor(cfg, optimizer_factory=lambda m: torch.optim.SGD(m.parameters(), lr=1e-1))
    ids = torch.randint(0, cfg.shape.vocab_size, (4, 12), generator=torch.Generator().manual_seed(3))
    mask = torch.zeros(4, 12)
    mask[:, 6:] = 1
    old = actor.compute_log_probs(PaddedBatch(ids, mask))
    adv = torch.tensor([1.0, 1.0, -1.0, -1.0])[:, None].expand(4, 12) * mask
    metrics = actor.train_step(PaddedBatch(ids, mask, advantages=adv, old_log_probs=old))
    assert abs(metrics["ppo_kl"]) < 1e-6  # at the first step, recomputed == old log-probs
    assert metrics["grad_norm"] > 0
    new = actor.compute_log_probs(PaddedBatch(ids, mask))
    delta = ((new - old) * mask).sum(-1)
    assert (delta[:2] > 0).all() and (delta[2:] < 0).all(), delta


def test_check_available_refuses_without_gpu() -> None:
    from vime.backends.megatron_utils import MegatronUnavailableError, check_available

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: nothing to refuse")
    with pytest.raises(MegatronUnavailableError, match="needs an NVIDIA GPU.*--train-backend torch"):
        check_available()


def test_train_py_refuses_megatron_without_gpu(tmp_path) -> None:
    """The real command line: refused before anything starts (no Ray, no engine, nothing written)."""
    import subprocess
    import sys

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: nothing to refuse")
    root = Path(__file__).resolve().parents[1]
    run = subprocess.run(
        [sys.executable, str(root / "train.py"), "--train-backend", "megatron", "--preset", "tiny-cpu",
         "--save", str(tmp_path / "save")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode != 0
    lines = [line for line in (run.stdout + run.stderr).strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "--train-backend megatron needs an NVIDIA GPU" in lines[0], lines
    assert not (tmp_path / "save").exists()
