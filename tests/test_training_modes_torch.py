"""LoRA, SFT, on-policy distillation and the loss hooks on the torch backend (tiny model, in-process).

Each flag of these modes has a test here (or in test_training_modes_args.py) that fails when the
flag is ignored: the trainer's output is compared with and without it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.train_args import debug_train_args
from vime.backends.factory import make_backend
from vime.backends.train_data import TrainBatch


def _args(model_dir: Path, *extra: str):
    return debug_train_args(model_dir, *extra)


def _data(rewards=(1.0, -1.0, 1.0, -1.0), **extra) -> dict:
    tokens = [[5, 6, 7, 8, 9, 10], [5, 6, 7, 11, 12], [20, 21, 22, 23], [20, 21, 30, 31, 32, 33, 34]]
    lengths = [3, 2, 1, 4]
    return {
        "tokens": tokens,
        "response_lengths": lengths,
        "rewards": list(rewards),
        "loss_masks": [[1] * n for n in lengths],
        "raw_reward": [1.0, 0.0, 1.0, 0.0],
        **extra,
    }


def _backend(model_dir: Path, *extra: str):
    backend = make_backend(_args(model_dir, *extra), rank=0, world_size=1)
    backend.init()
    return backend


def _base_weights(model_dir: Path) -> dict[str, torch.Tensor]:
    return load_file(str(model_dir / "model.safetensors"))


# ----- LoRA -----------------------------------------------------------------------------------------
def test_lora_trains_only_the_adapters_and_leaves_the_base_bit_for_bit(tiny_model_dir):
    backend = _backend(tiny_model_dir, "--lora-rank", "8", "--lora-alpha", "16")
    model = backend.model
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    base_before = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    lora_before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    backend.train(0, TrainBatch.from_rollout_data(_data()))
    for n, p in model.named_parameters():
        if n in base_before:
            assert torch.equal(p, base_before[n]), n
    assert any(not torch.equal(p, lora_before[n]) for n, p in model.named_parameters() if n in lora_before)


def test_target_and_exclude_modules_choose_where_adapters_go(tiny_model_dir):
    backend = _backend(tiny_model_dir, "--lora-rank", "8", "--target-modules", "q_proj,v_proj,o_proj",
                       "--exclude-modules", "o_proj")  # fmt: skip
    names = {n.split(".")[-4] for n, p in backend.model.named_parameters() if "lora_A" in n}
    assert names == {"q_proj", "v_proj"}


def test_lora_alpha_and_dropout_reach_the_adapters(tiny_model_dir):
    backend = _backend(tiny_model_dir, "--lora-rank", "8", "--lora-alpha", "32", "--lora-dropout", "0.25")
    layer = next(m for n, m in backend.model.named_modules() if n.endswith("q_proj"))
    assert layer.scaling["default"] == 32 / 8
    assert layer.lora_dropout["default"].p == 0.25


def test_adapter_checkpoint_export_and_resume(tiny_model_dir, tmp_path):
    save = tmp_path / "ckpt"
    backend = _backend(tiny_model_dir, "--lora-rank", "8", "--save", str(save))
    backend.train(0, TrainBatch.from_rollout_data(_data()))
    backend.save(0)
    step = save / "iter_0000000"
    assert (step / "adapter" / "adapter_config.json").is_file()
    assert not (step / "model").exists()  # the adapter alone: the base is --hf-checkpoint
    adapter = load_file(str(step / "adapter" / "adapter_model.safetensors"))
    assert adapter and all("lora_" in k for k in adapter)
    base_bytes = (tiny_model_dir / "model.safetensors").stat().st_size
    assert (step / "adapter" / "adapter_model.safetensors").stat().st_size < base_bytes / 4

    resumed = _backend(
        tiny_model_dir, "--lora-rank", "8", "--load", str(save), "--save", str(tmp_path / "c2")
    )
    batch = TrainBatch.from_rollout_data(_data())
    for a, b in zip(backend.compute_logprobs(batch), resumed.compute_logprobs(batch), strict=True):
        torch.testing.assert_close(a, b)
    fresh = _backend(tiny_model_dir, "--lora-rank", "8")
    assert not all(
        torch.allclose(a, b)
        for a, b in zip(fresh.compute_logprobs(batch), resumed.compute_logprobs(batch), strict=True)
    )


def test_merged_export_equals_the_adapted_model_and_the_merge_tool(tiny_model_dir, tmp_path):
    from transformers import AutoModelForCausalLM

    from tools.merge_lora_adapter import merge_adapter

    backend = _backend(tiny_model_dir, "--lora-rank", "8")
    backend.train(0, TrainBatch.from_rollout_data(_data()))
    merged_dir = backend.export_weights(tmp_path / "merged")
    adapter_dir = backend.export_adapter(tmp_path / "adapter")
    tool_dir = merge_adapter(tiny_model_dir, adapter_dir, tmp_path / "tool")
    batch = TrainBatch.from_rollout_data(_data())
    ids = torch.tensor([batch.tokens[3]])
    with torch.no_grad():
        adapted = backend.model(input_ids=ids).logits
        for directory in (merged_dir, tool_dir):
            plain = AutoModelForCausalLM.from_pretrained(str(directory), local_files_only=True).eval()
            torch.testing.assert_close(plain(input_ids=ids).logits, adapted, atol=1e-4, rtol=1e-4)
    assert json.loads((adapter_dir / "adapter_config.json").read_text())["r"] == 8
    assert _base_weights(tiny_model_dir).keys() == load_file(str(merged_dir / "model.safetensors")).keys()


def test_lora_adapter_path_starts_from_the_saved_adapter(tiny_model_dir, tmp_path):
    trained = _backend(tiny_model_dir, "--lora-rank", "8")
    trained.train(0, TrainBatch.from_rollout_data(_data()))
    adapter = trained.export_adapter(tmp_path / "adapter")
    started = _backend(tiny_model_dir, "--lora-adapter-path", str(adapter))
    batch = TrainBatch.from_rollout_data(_data())
    for a, b in zip(trained.compute_logprobs(batch), started.compute_logprobs(batch), strict=True):
        torch.testing.assert_close(a, b)
    assert any(p.requires_grad for p in started.model.parameters())  # it trains on from there


# ----- SFT and the custom loss ------------------------------------------------------------------------
def test_sft_loss_is_the_masked_negative_log_likelihood(tiny_model_dir):
    data = _data(rewards=(0.0, 0.0, 0.0, 0.0))
    data["loss_masks"] = [[1, 0, 1], [0, 1], [1], [0, 0, 1, 1]]
    backend = _backend(tiny_model_dir, "--loss-type", "sft_loss", "--lr", "0", "--calculate-per-token-loss")
    batch = TrainBatch.from_rollout_data(data)
    log_probs = backend.compute_logprobs(batch)
    masks = [torch.tensor(m, dtype=torch.float32) for m in data["loss_masks"]]
    expected = -sum((lp * m).sum() for lp, m in zip(log_probs, masks, strict=True)) / sum(
        m.sum() for m in masks
    )
    metrics = backend.train(0, TrainBatch.from_rollout_data(data))
    assert metrics["sft_loss"] == pytest.approx(float(expected), rel=1e-4)


def test_sft_training_lowers_the_loss(tiny_model_dir):
    backend = _backend(tiny_model_dir, "--loss-type", "sft_loss", "--disable-compute-advantages-and-returns")
    losses = [
        backend.train(step, TrainBatch.from_rollout_data(_data(rewards=(0.0,) * 4)))["sft_loss"]
        for step in range(4)
    ]
    assert losses[-1] < losses[0]


def test_disable_compute_advantages_leaves_zero_advantages(tiny_model_dir):
    from vime.backends.train_prep import compute_advantages

    for flags, zero in (((), False), (("--disable-compute-advantages-and-returns",), True)):
        args = _args(tiny_model_dir, "--loss-type", "sft_loss", *flags)
        batch = TrainBatch.from_rollout_data(_data())
        batch.computed["old_log_probs"] = [torch.zeros(n) for n in batch.response_lengths]
        compute_advantages(args, batch, 0.0)
        assert all(bool((a == 0).all()) for a in batch.computed["advantages"]) is zero


def test_custom_loss_gets_slime_batch_and_replaces_the_loss(tiny_model_dir):
    default = _backend(tiny_model_dir)
    custom = _backend(
        tiny_model_dir, "--loss-type", "custom_loss",
        "--custom-loss-function-path", "vime.backends.loss_hooks.policy_loss_function",
    )  # fmt: skip
    a, b = (
        default.train(0, TrainBatch.from_rollout_data(_data())),
        custom.train(0, TrainBatch.from_rollout_data(_data())),
    )
    assert b["loss"] == pytest.approx(a["pg_loss"], rel=1e-4, abs=1e-6)
    negated = _backend(
        tiny_model_dir, "--loss-type", "custom_loss",
        "--custom-loss-function-path", "tests.training_mode_hooks.negated_loss",
    )  # fmt: skip
    assert negated.train(0, TrainBatch.from_rollout_data(_data()))["loss"] == pytest.approx(
        -a["pg_loss"], rel=1e-4, abs=1e-6
    )


# ----- advantages: custom function and on-policy distillation --------------------------------------
def _advantages(model_dir: Path, *flags: str, **data_extra) -> list[torch.Tensor]:
    from vime.backends.train_prep import compute_advantages

    args = _args(model_dir, *flags)
    batch = TrainBatch.from_rollout_data(_data(**data_extra))
    batch.computed["old_log_probs"] = [torch.full((n,), -1.0) for n in batch.response_lengths]
    stats = compute_advantages(args, batch, 0.0)
    batch.computed["_stats"] = [torch.tensor(stats.get("opd_reverse_kl", float("nan")))]
    return batch.computed["advantages"], stats


def test_custom_advantage_function_replaces_the_estimator(tiny_model_dir):
    default, _ = _advantages(tiny_model_dir)
    custom, _ = _advantages(
        tiny_model_dir, "--custom-advantage-function-path", "tests.training_mode_hooks.doubled_advantages"
    )
    for d, c in zip(default, custom, strict=True):
        torch.testing.assert_close(c, 2 * d)


def test_opd_subtracts_the_scaled_reverse_kl(tiny_model_dir):
    teacher = [[-2.0, -0.5, -1.0], [-1.0, -1.0], [-3.0], [-0.5, -0.5, -2.0, -1.0]]
    plain, _ = _advantages(tiny_model_dir, teacher_log_probs=teacher)
    for coef in (1.0, 0.5):
        shaped, stats = _advantages(
            tiny_model_dir,
            "--use-opd",
            "--opd-type",
            "vllm",
            "--opd-kl-coef",
            str(coef),
            teacher_log_probs=teacher,
        )
        for p, s, t in zip(plain, shaped, teacher, strict=True):
            torch.testing.assert_close(s, p - coef * (-1.0 - torch.tensor(t)))
        flat = torch.tensor([x for row in teacher for x in row])
        assert stats["opd_reverse_kl"] == pytest.approx(float((-1.0 - flat).mean()), rel=1e-5)


def test_opd_with_a_teacher_in_the_trainer(tiny_model_dir, tiny_model_dir_seed1):
    flags = ("--use-opd", "--opd-type", "megatron", "--opd-kl-coef", "1.0")
    backend = _backend(tiny_model_dir, *flags, "--opd-teacher-load", str(tiny_model_dir_seed1))
    batch = TrainBatch.from_rollout_data(_data(rewards=(0.0,) * 4))
    student = torch.cat(backend.compute_logprobs(batch))
    teacher = torch.cat(_backend(tiny_model_dir_seed1).compute_logprobs(batch))
    metrics = backend.train(0, batch)
    assert metrics["opd_reverse_kl"] == pytest.approx(float((student - teacher).mean()), rel=1e-4, abs=1e-6)
    own = _backend(tiny_model_dir, *flags, "--opd-teacher-load", str(tiny_model_dir))
    assert (
        abs(own.train(0, TrainBatch.from_rollout_data(_data()))["opd_reverse_kl"]) < 1e-5
    )  # its own teacher


# ----- TIS and pg-loss reducer hooks ---------------------------------------------------------------
def test_custom_tis_and_reducer_hooks_change_the_loss_and_defaults_do_not(tiny_model_dir):
    data = _data(rollout_log_probs=[[-3.0] * 3, [-3.0] * 2, [-3.0], [-3.0] * 4])
    base = ("--use-tis", "--lr", "0")
    plain = _backend(tiny_model_dir, *base).train(0, TrainBatch.from_rollout_data(data))
    same_tis = _backend(
        tiny_model_dir, *base, "--custom-tis-function-path", "vime.backends.loss_hooks.vanilla_tis_function"
    ).train(0, TrainBatch.from_rollout_data(data))
    assert same_tis["pg_loss"] == pytest.approx(plain["pg_loss"], rel=1e-5, abs=1e-7)
    zero_tis = _backend(
        tiny_model_dir, *base, "--custom-tis-function-path", "tests.training_mode_hooks.reject_all_tis"
    ).train(0, TrainBatch.from_rollout_data(data))
    assert zero_tis["pg_loss"] == 0.0 and plain["pg_loss"] != 0.0
    same_reducer = _backend(
        tiny_model_dir, *base,
        "--custom-pg-loss-reducer-function-path", "vime.backends.loss_hooks.sum_of_sample_mean_reducer",
    ).train(0, TrainBatch.from_rollout_data(data))  # fmt: skip
    assert same_reducer["pg_loss"] == pytest.approx(plain["pg_loss"], rel=1e-5, abs=1e-7)
    doubled = _backend(
        tiny_model_dir, *base,
        "--custom-pg-loss-reducer-function-path", "tests.training_mode_hooks.doubled_reducer",
    ).train(0, TrainBatch.from_rollout_data(data))  # fmt: skip
    assert doubled["pg_loss"] == pytest.approx(2 * plain["pg_loss"], rel=1e-5, abs=1e-7)
