"""Megatron's model, runtime and optimizer flags as slime's recipes pass them: checked against the
checkpoint, honoured by the torch backend where they mean something there, refused in one line
otherwise, and never accepted and ignored."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from vime.utils.args.flag_types import int_or_pattern
from vime.utils.args.refusals import REFUSED_FLAGS, refused_flag_names
from vime.utils.arguments import parse_args

ROOT = Path(__file__).resolve().parents[1]

# The tiny test model (Qwen2 shape) described the way a slime scripts/models/*.sh file would.
TINY_MODEL_ARGS = [
    "--swiglu",
    "--num-layers", "2",
    "--hidden-size", "128",
    "--ffn-hidden-size", "256",
    "--num-attention-heads", "2",
    "--group-query-attention",
    "--num-query-groups", "1",
    "--kv-channels", "64",
    "--use-rotary-position-embeddings",
    "--disable-bias-linear",
    "--add-qkv-bias",
    "--normalization", "RMSNorm",
    "--norm-epsilon", "1e-6",
    "--rotary-base", "10000",
    "--vocab-size", "439",
    "--untie-embeddings-and-output-weights",
]  # fmt: skip


def _base(model_dir: Path) -> list[str]:
    return [
        "--debug-train-only",
        "--hf-checkpoint", str(model_dir),
        "--rollout-batch-size", "2",
        "--n-samples-per-prompt", "2",
        "--num-rollout", "2",
    ]  # fmt: skip


def _error(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_a_model_script_that_matches_the_checkpoint_parses(tiny_model_dir):
    args = parse_args(_base(tiny_model_dir) + TINY_MODEL_ARGS)
    assert args.num_layers == 2 and args.swiglu and args.train_backend == "torch"


@pytest.mark.parametrize(
    ("change", "flag", "hf"),
    [
        (["--num-layers", "3"], "--num-layers (3)", "num_hidden_layers=2"),
        (["--hidden-size", "256"], "--hidden-size (256)", "hidden_size=128"),
        (["--num-query-groups", "2"], "--num-query-groups (2)", "num_key_value_heads=1"),
        (["--kv-channels", "32"], "--kv-channels (32)", "head_dim=64"),
        (["--rotary-base", "1000000"], "--rotary-base (1000000.0)", "rope_theta=10000.0"),
        (["--norm-epsilon", "1e-5"], "--norm-epsilon (1e-05)", "rms_norm_eps=1e-06"),
        (["--qk-layernorm"], "--qk-layernorm (True)", "q/k norms=False"),
        (["--vocab-size", "512"], "--vocab-size (512)", "vocab_size=439"),
    ],
)
def test_a_flag_that_disagrees_with_the_checkpoint_is_one_line(capsys, tiny_model_dir, change, flag, hf):
    argv = _base(tiny_model_dir) + TINY_MODEL_ARGS + change
    err = _error(capsys, argv)
    assert flag in err and hf in err and str(tiny_model_dir) in err


@pytest.mark.parametrize(
    ("dropped", "fix"),
    [
        ("--swiglu", "add --swiglu"),
        ("--add-qkv-bias", "add --add-qkv-bias"),
        ("--untie-embeddings-and-output-weights", "add --untie-embeddings-and-output-weights"),
        ("--disable-bias-linear", "add --disable-bias-linear"),
        ("--use-rotary-position-embeddings", "--position-embedding-type rope"),
    ],
)
def test_a_missing_switch_has_megatrons_meaning(capsys, tiny_model_dir, dropped, fix):
    argv = _base(tiny_model_dir) + [a for a in TINY_MODEL_ARGS if a != dropped]
    assert fix in _error(capsys, argv)


def test_refused_flags_stop_the_launch_with_their_reason(capsys, tiny_model_dir):
    err = _error(capsys, _base(tiny_model_dir) + ["--multi-latent-attention", "--kv-lora-rank", "512"])
    assert err.startswith("error: --multi-latent-attention: multi-latent attention") and "1 more" in err
    err = _error(capsys, _base(tiny_model_dir) + ["--update-weight-mode", "delta"])
    assert "--update-weight-mode delta" in err and "--weight-sync" in err
    # a value that only restates slime's default asks for what vime does
    assert parse_args(_base(tiny_model_dir) + ["--update-weight-mode", "full"]).update_weight_mode == "full"


def test_every_refused_flag_parses_and_is_refused(tiny_model_dir, capsys):
    samples = {"switch": [], "value": ["1"], "values": ["1"]}
    for row in REFUSED_FLAGS:
        argv = _base(tiny_model_dir) + [row.flag, *samples[row.takes]]
        err = _error(capsys, argv)
        assert err.startswith(f"error: {row.flag}"), err
    assert "--mtp-num-layers" in refused_flag_names()


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--optimizer-cpu-offload"], "--optimizer-cpu-offload is megatron-core's optimizer feature"),
        (["--use-precision-aware-optimizer"], "--use-precision-aware-optimizer"),
        (["--recompute-granularity", "selective"], "selective"),
        (
            ["--recompute-granularity", "full", "--recompute-method", "block", "--recompute-num-layers", "1"],
            "recomputes only some layers",
        ),
        (["--hidden-dropout", "0.1"], "--hidden-dropout > 0"),
        (["--expert-model-parallel-size", "2"], "expert parallelism"),
        (["--context-parallel-size", "2"], "Transformer Engine"),
        (["--bf16", "--accumulate-allreduce-grads-in-fp32"], "bf16 gradients"),
        (["--spec", "my.mod", "get_spec"], "--spec my.mod get_spec builds a Megatron layer spec"),
        (["--lr-warmup-fraction", "0.1", "--lr-warmup-iters", "3"], "keep one"),
        (["--max-tokens-per-gpu", "100"], "--use-dynamic-batch-size"),
    ],
)
def test_the_torch_backend_refuses_what_it_cannot_honour(capsys, tiny_model_dir, flags, needle):
    assert needle in _error(capsys, _base(tiny_model_dir) + flags)


def test_the_torch_backend_honours_recompute_attention_kernel_optimizer_and_warmup(tiny_model_dir):
    from vime.backends.factory import make_backend

    args = parse_args(
        _base(tiny_model_dir)
        + TINY_MODEL_ARGS
        + ["--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1"]
        + ["--attention-backend", "unfused", "--optimizer", "sgd", "--sgd-momentum", "0.5"]
        + ["--lr-warmup-fraction", "0.5", "--attention-dropout", "0.25", "--num-steps-per-rollout", "2"]
    )
    flash_before = torch.backends.cuda.flash_sdp_enabled()
    try:
        backend = make_backend(args, rank=0, world_size=1)
        backend.init()
        assert backend.model.is_gradient_checkpointing
        assert torch.backends.cuda.math_sdp_enabled() and not torch.backends.cuda.flash_sdp_enabled()
        assert isinstance(backend.optimizer, torch.optim.SGD)
        assert backend.optimizer.param_groups[0]["momentum"] == 0.5
        assert backend.model.config.attention_dropout == 0.25
        # 2 rollouts x 2 steps: half of them warm up, so the first step runs at lr / 2
        assert backend.scheduler.lr_lambdas[0](0) == pytest.approx(0.5)
        assert backend.scheduler.lr_lambdas[0](2) == pytest.approx(1.0)
    finally:
        torch.backends.cuda.enable_flash_sdp(flash_before)
        torch.backends.cuda.enable_mem_efficient_sdp(True)
        torch.backends.cuda.enable_math_sdp(True)


def test_layer_patterns_are_read_without_eval():
    assert int_or_pattern("2") == 2
    assert int_or_pattern("[0]*1+[1]*3") == [0, 1, 1, 1]
    assert int_or_pattern("([1]*2+[0])*2") == [1, 1, 0, 1, 1, 0]
    for bad in ("__import__('os')", "[0]*'a'", "[1.5]"):
        with pytest.raises(argparse.ArgumentTypeError):
            int_or_pattern(bad)


def test_train_py_refuses_without_a_traceback(tiny_model_dir):
    """The whole launch path: one line on stderr, exit 2, nothing started."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), *_base(tiny_model_dir), "--enable-mtp-training"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert proc.returncode == 2 and len(lines) == 1 and "--enable-mtp-training" in lines[0]
    assert "Traceback" not in proc.stderr


def test_a_torch_dist_reference_is_refused_with_the_conversion(capsys, tiny_model_dir, tmp_path):
    torch_dist = tmp_path / "Qwen3-4B_torch_dist"
    (torch_dist / "iter_0000000").mkdir(parents=True)
    err = _error(capsys, _base(tiny_model_dir) + ["--use-kl-loss", "--ref-load", str(torch_dist)])
    assert "is not a Hugging Face model dir" in err and "convert_torch_dist_to_hf.py" in err
    args = parse_args(_base(tiny_model_dir) + ["--use-kl-loss", "--ref-load", str(tiny_model_dir)])
    assert args.ref_load == str(tiny_model_dir)


def test_a_leftover_sglang_flag_is_one_line_not_argparse(capsys, tiny_model_dir):
    argv = _base(tiny_model_dir) + ["--sglang-ep-size", "8", "--sglang-enable-dp-lm-head"]
    err = _error(capsys, argv)
    assert err.startswith("error: --sglang-ep-size (and 1 more: --sglang-enable-dp-lm-head)")
    assert "no vLLM counterpart" in err and "unrecognized" not in err
