"""vime's command line: layers, derived values, explicit zeros, one-line errors."""

import pytest

from vime.utils.arguments import ArgumentValidationError, build_parser, parse_args, validate_args


def _base(model_dir, *extra: str) -> list[str]:
    return ["--hf-checkpoint", str(model_dir), "--rollout-batch-size", "4", "--n-samples-per-prompt", "2",
            "--num-rollout", "3", *extra]  # fmt: skip


def _error(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err, err  # one line, no usage dump
    return err


def test_three_layers_share_one_parser():
    flags = build_parser()._option_string_actions
    assert "--train-backend" in flags and "--lr" in flags  # training backend
    assert "--vllm-max-num-seqs" in flags and "--router-policy" in flags  # generated from vLLM / router
    assert "--rollout-batch-size" in flags and "--colocate" in flags  # vime's own (slime's names)


def test_explicit_zero_rollout_gpus_stays_zero(tiny_model_dir):
    for extra in ([], ["--colocate"], ["--actor-num-gpus-per-node", "2", "--rollout-batch-size", "8"]):
        args = parse_args(_base(tiny_model_dir, "--rollout-num-gpus", "0", *extra))
        assert args.rollout_num_gpus == 0
    args = parse_args(_base(tiny_model_dir, "--rollout-num-engines", "0"))
    assert args.rollout_num_engines == 0  # an explicit zero engines is zero engines


def test_derived_values(tiny_model_dir):
    args = parse_args(_base(tiny_model_dir, "--colocate"))
    assert args.offload_train and args.offload_rollout  # colocate implies offload
    assert args.global_batch_size == 8 and args.num_steps_per_rollout == 1
    args = parse_args(
        _base(tiny_model_dir, "--num-steps-per-rollout", "2", "--no-offload-train", "--colocate")
    )
    assert args.global_batch_size == 4 and args.offload_train is False  # an explicit "no" wins
    assert args.eps_clip_high == args.eps_clip
    assert parse_args(_base(tiny_model_dir, "--advantage-estimator", "ppo")).use_critic


def test_preset_sets_defaults_and_flags_win(tiny_model_dir):
    args = parse_args(["--preset", "tiny-cpu", "--hf-checkpoint", str(tiny_model_dir), "--num-rollout", "2"])
    assert args.num_rollout == 2 and args.rollout_num_engines == 1 and args.rm_type == "math"
    assert args.hf_checkpoint == str(tiny_model_dir)


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--rollout-batch-size", "0"], "--rollout-batch-size must be >= 1"),
        (["--global-batch-size", "3"], "--global-batch-size 3 does not divide the 8 samples"),
        (["--rollout-num-gpus", "-1"], "--rollout-num-gpus must be >= 0"),
        (["--rollout-num-gpus", "3", "--rollout-num-gpus-per-engine", "2"], "not a multiple"),
        (["--eps-clip-c", "0.5"], "--eps-clip-c must be > 1"),
        (["--kl-ctl", "adaptive"], "--kl-ctl adaptive needs --kl-target and --kl-horizon"),
        (["--debug-rollout-only", "--debug-train-only"], "exclude each other"),
        (["--n-samples-per-prompt", "1"], "set --n-samples-per-prompt to 2 or more"),
        (["--eval-prompt-data", "only-a-name"], "--eval-prompt-data takes pairs"),
        (["--load", "/nonexistent/ckpt"], "--load /nonexistent/ckpt does not exist"),
        (["--vllm-max-num-seqs", "lots"], "fix the --vllm-* flags"),
    ],
)
def test_bad_values_fail_in_one_line(tiny_model_dir, capsys, extra, needle):
    assert needle in _error(capsys, _base(tiny_model_dir, *extra))


def test_missing_essentials(capsys, tmp_path):
    assert "--rollout-batch-size is required" in _error(
        capsys, ["--hf-checkpoint", str(tmp_path), "--num-rollout", "1"]
    )
    assert "--hf-checkpoint is required" in _error(
        capsys, ["--rollout-batch-size", "1", "--num-rollout", "1"]
    )
    assert "is not a directory" in _error(
        capsys, ["--hf-checkpoint", str(tmp_path / "nope"), "--rollout-batch-size", "1", "--num-rollout", "1"]
    )
    assert "unknown --preset 'huge'" in _error(capsys, ["--preset", "huge"])


def test_megatron_refused_at_once_without_gpu(tiny_model_dir, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the refusal is for GPU-less machines")
    err = _error(capsys, ["--train-backend", "megatron", "--preset", "tiny-cpu"])
    assert "--train-backend megatron needs an NVIDIA GPU" in err and "--train-backend torch" in err


def test_validate_args_raises_for_library_callers(tiny_model_dir):
    args = parse_args(_base(tiny_model_dir), validate=False)
    args.micro_batch_size = 0
    with pytest.raises(ArgumentValidationError, match="--micro-batch-size must be >= 1"):
        validate_args(args)


def test_model_parallel_sizes(tiny_model_dir, capsys):
    err = _error(capsys, _base(tiny_model_dir, "--tensor-model-parallel-size", "2"))
    assert "the torch backend is data-parallel only" in err
    args = parse_args(_base(tiny_model_dir), validate=False)
    args.train_backend, args.actor_num_gpus_per_node, args.tensor_model_parallel_size = "megatron", 4, 2
    from vime.utils.args.validation import data_parallel_size

    assert data_parallel_size(args) == 2
    args.tensor_model_parallel_size = 3
    with pytest.raises(ArgumentValidationError, match="do not split into model-parallel groups of 3"):
        data_parallel_size(args)


def test_flags_other_parts_read_are_defined():
    """Flags the rollout side reads through getattr exist, so users can set them."""
    flags = build_parser()._option_string_actions
    for flag in ("--rollout-sample-filter-path", "--custom-rollout-log-function-path", "--rm-timeout-s",
                 "--context-parallel-size", "--rollout-num-engines", "--vllm-base-port"):  # fmt: skip
        assert flag in flags, flag
