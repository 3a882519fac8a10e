"""``--train-backend megatron``'s TrainBackend against the torch backend, on the CPU, same weights.

Megatron-core 0.16.1 needs ``torch.cuda.current_device`` patched to run on the CPU and its optimizer is
CUDA-only: the fixture patches that function for this module only, and the backend under test gets
the torch backend's own AdamW through ``optimizer_factory`` (the documented test hook). Everything
else (padding, Megatron forward/backward, log-probs, advantages, loss, export) is the real code.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytest.importorskip("megatron.core")

from megatron_cpu_support import megatron_on_cpu

from tests.train_args import debug_train_args
from vime.backends.train_data import TrainBatch


@pytest.fixture(scope="module")
def megatron_cpu():
    yield from megatron_on_cpu()


def _args(model_dir: Path, *extra: str):
    return debug_train_args(model_dir, *extra)


def _rollout_data() -> dict:
    tokens = [[5, 6, 7, 8, 9, 10], [5, 6, 7, 11, 12], [20, 21, 22, 23], [20, 21, 30, 31, 32, 33, 34]]
    lengths = [3, 2, 1, 4]
    return {
        "tokens": tokens,
        "response_lengths": lengths,
        "rewards": [1.0, -1.0, 1.0, -1.0],
        "loss_masks": [[1] * n for n in lengths],
        "rollout_log_probs": [[-2.0] * n for n in lengths],
    }


def _backends(args, with_torch: bool = True):
    from vime.backends.megatron_utils.backend import MegatronTrainBackend
    from vime.backends.torch_utils.actor import TorchTrainBackend
    from vime.backends.torch_utils.model import make_optimizer

    class CpuMegatronBackend(MegatronTrainBackend):
        optimizer_factory = staticmethod(lambda model: make_optimizer(args, model.parameters(), args.lr))

    torch_backend = TorchTrainBackend(args, 0, 1) if with_torch else None
    if torch_backend is not None:
        torch_backend.init()
    megatron_backend = CpuMegatronBackend(args, 0, 1)
    megatron_backend.start = megatron_backend.init()
    return torch_backend, megatron_backend


@pytest.mark.parametrize(
    "extra",
    [(), ("--use-kl-loss", "--kl-loss-coef", "0.1", "--rollout-temperature", "0.7")],
    ids=["grpo", "grpo_kl_loss_temperature"],
)
def test_megatron_backend_trains_like_the_torch_backend(megatron_cpu, tiny_model_dir, extra) -> None:
    """Same weights, same batch: equal log-probs, equal loss metrics, equal weights after two rollouts."""
    args = _args(tiny_model_dir, *extra)
    torch_backend, megatron_backend = _backends(args)
    assert megatron_backend.start == 0
    batch = TrainBatch.from_rollout_data(_rollout_data())
    before = torch_backend.compute_logprobs(batch)
    for ref, got in zip(before, megatron_backend.compute_logprobs(batch), strict=True):
        torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)
    for rollout_id in range(2):
        ref_metrics = torch_backend.train(rollout_id, TrainBatch.from_rollout_data(_rollout_data()))
        got_metrics = megatron_backend.train(rollout_id, TrainBatch.from_rollout_data(_rollout_data()))
        for key in ("pg_loss", "ppo_kl", "entropy", "grad_norm", "train_rollout_kl", "loss"):
            assert got_metrics[key] == pytest.approx(ref_metrics[key], rel=1e-4, abs=1e-6), key
    after_ref = torch_backend.compute_logprobs(batch)
    after_got = megatron_backend.compute_logprobs(batch)
    moved = max((a - b).abs().max().item() for a, b in zip(after_ref, before, strict=True))
    assert moved > 1e-3  # training changed the policy, so the agreement below is not trivial
    for ref, got in zip(after_ref, after_got, strict=True):
        torch.testing.assert_close(got, ref, atol=1e-4, rtol=1e-4)


def test_export_weights_writes_a_loadable_hf_dir(megatron_cpu, tiny_model_dir, tmp_path) -> None:
    """export_weights -> an HF directory whose model gives the Megatron backend's log-probs."""
    from transformers import AutoModelForCausalLM

    from vime.backends.torch_utils.forward import response_logprobs

    args = _args(tiny_model_dir)
    _, megatron_backend = _backends(args)
    batch = TrainBatch.from_rollout_data(_rollout_data())
    megatron_backend.train(0, batch)
    out = megatron_backend.export_weights(tmp_path / "hf")
    assert out is not None and (out / "config.json").exists() and (out / "tokenizer.json").exists()
    hf = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32).eval()
    with torch.no_grad():
        lp, _ = response_logprobs(hf, batch.tokens, batch.response_lengths)
    for i, got in enumerate(megatron_backend.compute_logprobs(batch)):
        torch.testing.assert_close(got, lp[i, : batch.response_lengths[i]], atol=1e-5, rtol=1e-5)


def test_save_and_resume_continue_at_the_next_rollout(megatron_cpu, tiny_model_dir, tmp_path) -> None:
    """save(k) writes a Megatron dist checkpoint; a new backend with --load starts at k+1 with those weights.
    (The optimizer state of the torch stand-in optimizer is not in it; on GPUs Megatron's is, and
    tests/test_megatron_gpu.py checks that the resumed step equals the original one.)"""
    save = tmp_path / "ckpt"
    args = _args(tiny_model_dir, "--save", str(save))
    _, first = _backends(args, with_torch=False)
    batch = TrainBatch.from_rollout_data(_rollout_data())
    first.train(0, batch)
    first.save(0)
    trained = first.compute_logprobs(batch)
    with pytest.raises(FileExistsError, match="already exists"):
        first.save(0)  # an existing checkpoint is never overwritten
    _, resumed = _backends(_args(tiny_model_dir, "--load", str(save)), with_torch=False)
    assert resumed.start == 1
    for a, b in zip(trained, resumed.compute_logprobs(batch), strict=True):
        torch.testing.assert_close(a, b, atol=0, rtol=0)


def test_gpu_check_arguments_are_train_py_defaults(tiny_model_dir) -> None:
    """tests/megatron_gpu_backend_checks.py builds its arguments by hand (no vLLM on the GPU machine):
    they must stay train.py's defaults, except the few it sets on purpose."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "megatron_gpu_backend_checks", Path(__file__).with_name("megatron_gpu_backend_checks.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    parsed = vars(_args(tiny_model_dir))
    on_purpose = {"lr", "micro_batch_size"}
    for key, value in module.BACKEND_ARGS.items():
        assert key in parsed, f"{key} is no longer an argument"
        if key not in on_purpose:
            assert parsed[key] == value, (key, parsed[key], value)


def test_megatron_dynamic_batching_trains_like_the_torch_backend(megatron_cpu, tiny_model_dir) -> None:
    """Token-budget micro-batches (the same flags in both backends): equal metrics and log-probs, and
    the Megatron forwards stay within the budget."""
    extra = ("--use-dynamic-batch-size", "--max-tokens-per-gpu", "10", "--optimizer", "sgd")
    args = _args(tiny_model_dir, *extra)
    torch_backend, megatron_backend = _backends(args)
    shapes: list[tuple[int, int]] = []
    hook = megatron_backend.actor.model.register_forward_pre_hook(
        lambda _m, _a, kw: shapes.append(tuple(kw["input_ids"].shape)), with_kwargs=True
    )
    ref_metrics = torch_backend.train(0, TrainBatch.from_rollout_data(_rollout_data()))
    got_metrics = megatron_backend.train(0, TrainBatch.from_rollout_data(_rollout_data()))
    hook.remove()
    for key in ("pg_loss", "entropy", "grad_norm", "loss"):
        assert got_metrics[key] == pytest.approx(ref_metrics[key], rel=1e-4, abs=1e-6), key
    assert all(b * w <= 10 or b == 1 for b, w in shapes) and len(shapes) > 2  # not the 2 fixed chunks
    batch = TrainBatch.from_rollout_data(_rollout_data())
    for ref, got in zip(
        torch_backend.compute_logprobs(batch), megatron_backend.compute_logprobs(batch), strict=True
    ):
        torch.testing.assert_close(got, ref, atol=1e-4, rtol=1e-4)


def test_megatron_runtime_flags_reach_the_transformer_config(megatron_cpu, tiny_model_dir) -> None:
    """Megatron's runtime flags are megatron-core's config, not ignored: recompute, dropout, kernels.
    (Recompute and dropout fork the CUDA RNG when they run, so on the CPU only their config is checked.)"""
    args = _args(
        tiny_model_dir,
        "--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1",
        "--attention-dropout", "0.05",
        "--attention-backend", "unfused", "--attention-softmax-in-fp32",
        "--make-vocab-size-divisible-by", "64",
    )  # fmt: skip
    args.hidden_dropout = 0.1  # validation on the CPU is the torch backend's, which refuses it
    _, megatron_backend = _backends(args, with_torch=False)
    config = megatron_backend.actor.model.config
    assert (config.recompute_granularity, config.recompute_method, config.recompute_num_layers) == (
        "full",
        "uniform",
        1,
    )
    assert (config.hidden_dropout, config.attention_dropout) == (0.1, 0.05)
    assert config.attention_softmax_in_fp32
    attention = megatron_backend.actor.model.decoder.layers[0].self_attention.core_attention
    assert attention.kernel == "unfused"
    assert megatron_backend.actor.model.vocab_size % 64 == 0 and megatron_backend.actor.model.vocab_size % 128


def test_megatron_lr_warmup_and_pad_multiple_apply_in_training(megatron_cpu, tiny_model_dir) -> None:
    args = _args(tiny_model_dir, "--lr-warmup-iters", "4")
    args.data_pad_size_multiplier = 8  # Megatron-only; the CPU validates for the torch backend
    _, megatron_backend = _backends(args, with_torch=False)
    widths: list[int] = []
    megatron_backend.actor.model.register_forward_pre_hook(
        lambda _m, _a, kw: widths.append(kw["input_ids"].shape[1]), with_kwargs=True
    )
    metrics = megatron_backend.train(0, TrainBatch.from_rollout_data(_rollout_data()))
    assert metrics["lr"] == pytest.approx(1e-2 / 4)  # the first warm-up step of four
    assert widths and all(w % 8 == 0 for w in widths)  # micro-batches padded to the multiplier


def test_megatron_log_probs_chunking_gives_the_same_numbers(
    megatron_cpu, tiny_model_dir, monkeypatch
) -> None:
    from vime.backends.megatron_utils import logprobs

    widths: list[int] = []
    real = logprobs.vocab_parallel_logprobs_and_entropy

    def counted(logits, *rest, **kw):
        widths.append(logits.shape[1])
        return real(logits, *rest, **kw)

    monkeypatch.setattr(logprobs, "vocab_parallel_logprobs_and_entropy", counted)
    batch = TrainBatch.from_rollout_data(_rollout_data())
    _, whole = _backends(_args(tiny_model_dir), with_torch=False)
    chunked_args = _args(tiny_model_dir)
    chunked_args.log_probs_chunk_size = 2  # Megatron-only; the CPU validates for the torch backend
    _, chunked = _backends(chunked_args, with_torch=False)
    widths.clear()
    whole_lp = whole.compute_logprobs(batch)
    assert max(widths) > 2
    widths.clear()
    chunked_lp = chunked.compute_logprobs(batch)
    assert max(widths) == 2  # the flag cut the positions into chunks of two
    for a, b in zip(whole_lp, chunked_lp, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)
    m_whole = whole.train(0, TrainBatch.from_rollout_data(_rollout_data()))
    m_chunked = chunked.train(0, TrainBatch.from_rollout_data(_rollout_data()))
    assert m_chunked["grad_norm"] == pytest.approx(m_whole["grad_norm"], rel=1e-5)


def test_norms_take_the_training_dtype(megatron_cpu, tiny_model_dir) -> None:
    """Torch norms of the local spec follow params_dtype (bf16 here), as every other weight does."""
    from vime.backends.megatron_utils.hf_config import load_shape
    from vime.backends.megatron_utils.model_builder import ParallelSizes, build_gpt_model

    model = build_gpt_model(
        load_shape(tiny_model_dir), ParallelSizes(), dtype=torch.bfloat16, use_cpu_init=True
    )
    dtypes = {name: p.dtype for name, p in model.named_parameters()}
    assert any("layernorm" in n for n in dtypes)
    assert set(dtypes.values()) == {torch.bfloat16}, {n: d for n, d in dtypes.items() if d != torch.bfloat16}
