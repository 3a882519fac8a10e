"""Checks of the trainer's flags, each failure one line naming the flag and the fix.

Run by ``validate_args`` before anything starts: refused flags first (a slime launch learns at
once which feature vime lacks), then the backend choice, the architecture flags against the
checkpoint, and the runtime, optimizer and batching flags against what the chosen backend can do.
"""

from __future__ import annotations

import argparse
import os

from vime.utils.args.megatron_runtime import MegatronRuntime, runtime_problem
from vime.utils.args.model_arch import ModelArchFlags
from vime.utils.args.model_check import check_model_flags, mismatch_line, model_name_problem, read_hf_config
from vime.utils.args.refusals import refused_flags_given
from vime.utils.tensorboard_log import TensorboardConfig, tensorboard_problem


class TrainingFlagError(ValueError):
    """One line: the flag, why vime cannot take it, what to do instead."""


def megatron_available() -> bool:
    """megatron-core importable (without importing it: it is slow and warns)."""
    import importlib.util

    return importlib.util.find_spec("megatron.core") is not None


def resolve_train_backend(args: argparse.Namespace, gpu: bool) -> None:
    """``auto`` -> megatron with a GPU and megatron-core (slime's trainer), torch otherwise; then
    the training dtype: bf16 for Megatron unless ``--no-bf16`` (slime always trains it in bf16)."""
    if args.train_backend == "auto":
        args.train_backend = "megatron" if (gpu and megatron_available()) else "torch"
    if args.bf16 is None:
        args.bf16 = args.train_backend == "megatron"


def check_refused(args: argparse.Namespace) -> None:
    lines = refused_flags_given(args)
    if lines:
        extra = f" (and {len(lines) - 1} more refused flag(s))" if len(lines) > 1 else ""
        raise TrainingFlagError(lines[0] + extra)


def check_model_arch(args: argparse.Namespace) -> None:
    """The architecture flags against ``--hf-checkpoint``'s config.json (when both are there)."""
    arch = ModelArchFlags.from_args(args)
    if arch.spec is not None and args.train_backend != "megatron":
        raise TrainingFlagError(
            f"--spec {' '.join(arch.spec)} builds a Megatron layer spec; the torch backend builds the model "
            "from --hf-checkpoint: drop --spec or use --train-backend megatron"
        )
    path = os.path.join(args.hf_checkpoint, "config.json") if args.hf_checkpoint is not None else None
    cfg = read_hf_config(args.hf_checkpoint) if path is not None and os.path.isfile(path) else None
    if args.model_name is not None:
        problem = model_name_problem(args.model_name, cfg)
        if problem:
            raise TrainingFlagError(problem)
    if not arch.described or args.hf_checkpoint is None:
        return
    if cfg is None:
        raise TrainingFlagError(
            f"--hf-checkpoint {args.hf_checkpoint} has no config.json to check the model flags "
            "(--num-layers, --hidden-size, ...) against: give a Hugging Face model dir"
        )
    mismatches = check_model_flags(arch, cfg)
    if mismatches:
        raise TrainingFlagError(mismatch_line(mismatches, args.hf_checkpoint))


def check_moe(args: argparse.Namespace, gpu: bool) -> None:
    """The MoE flags: runtime flags against the backend, architecture flags against the checkpoint,
    expert parallel sizes against the experts and the GPUs."""
    from vime.utils.args.moe import moe_problem

    visible = None
    if gpu:
        import torch

        visible = torch.cuda.device_count()
    problem = moe_problem(args, visible)
    if problem:
        raise TrainingFlagError(problem)


def check_reference(args: argparse.Namespace) -> None:
    """slime's ``--ref-load`` is a Megatron ``torch_dist`` dir; vime's reference loads HF weights."""
    needed = args.kl_coef or args.use_kl_loss
    if args.ref_load is None or not needed:
        return
    if not os.path.isdir(args.ref_load):
        raise TrainingFlagError(
            f"--ref-load {args.ref_load} does not exist: give the reference model's Hugging Face dir "
            "(or drop it to use --hf-checkpoint)"
        )
    if not os.path.isfile(os.path.join(args.ref_load, "config.json")):
        raise TrainingFlagError(
            f"--ref-load {args.ref_load} is not a Hugging Face model dir (no config.json); vime's reference "
            "model loads HF weights: point it at the reference's HF dir (slime's torch_dist checkpoints "
            "convert with tools/convert_torch_dist_to_hf.py)"
        )


def check_runtime(args: argparse.Namespace) -> None:
    runtime = MegatronRuntime.from_args(args)
    if runtime.context_parallel_size > 1:
        raise TrainingFlagError(
            f"--context-parallel-size {runtime.context_parallel_size}: context parallelism needs Transformer "
            "Engine attention, which vime's install does not ship; use 1 and a --max-tokens-per-gpu that "
            "fits one GPU"
        )
    problem = runtime_problem(runtime, args.train_backend, ModelArchFlags.from_args(args).num_layers)
    if problem:
        raise TrainingFlagError(problem)


def check_optimizer(args: argparse.Namespace) -> None:
    if args.lr_warmup_fraction is not None:
        if not 0.0 <= args.lr_warmup_fraction < 1.0:
            raise TrainingFlagError(f"--lr-warmup-fraction must be in [0, 1), got {args.lr_warmup_fraction}")
        if args.lr_warmup_iters:
            raise TrainingFlagError(
                "--lr-warmup-fraction and --lr-warmup-iters both set the warm-up: keep one"
            )
    if not 0.0 < args.optimizer_offload_fraction <= 1.0:
        raise TrainingFlagError(
            f"--optimizer-offload-fraction must be in (0, 1], got {args.optimizer_offload_fraction}"
        )
    if args.train_backend != "torch":
        if args.overlap_cpu_optimizer_d2h_h2d and not args.optimizer_cpu_offload:
            raise TrainingFlagError(
                "--overlap-cpu-optimizer-d2h-h2d overlaps --optimizer-cpu-offload's copies: add it or drop this flag"
            )
        return
    megatron_only = [
        flag
        for flag, on in (
            ("--optimizer-cpu-offload", args.optimizer_cpu_offload),
            ("--overlap-cpu-optimizer-d2h-h2d", args.overlap_cpu_optimizer_d2h_h2d),
            ("--use-precision-aware-optimizer", args.use_precision_aware_optimizer),
        )
        if on
    ]
    if megatron_only:
        raise TrainingFlagError(
            f"{megatron_only[0]} is megatron-core's optimizer feature; the torch backend keeps AdamW's state on "
            "its device: drop it or use --train-backend megatron on a GPU"
        )
    if args.accumulate_allreduce_grads_in_fp32 and args.bf16:
        raise TrainingFlagError(
            "--accumulate-allreduce-grads-in-fp32 with --bf16: the torch backend trains bf16 parameters with "
            "bf16 gradients (no fp32 main copy); drop --bf16 to train in fp32, or use --train-backend megatron"
        )


def check_batching(args: argparse.Namespace) -> None:
    """Dynamic batching (slime's ``--use-dynamic-batch-size``): a token budget per micro-batch."""
    for flag, value in (
        ("--max-tokens-per-gpu", args.max_tokens_per_gpu),
        ("--log-probs-max-tokens-per-gpu", args.log_probs_max_tokens_per_gpu),
    ):
        if value is not None and value < 1:
            raise TrainingFlagError(f"{flag} must be >= 1, got {value}")
    if args.use_dynamic_batch_size:
        if args.max_tokens_per_gpu is None:
            raise TrainingFlagError(
                "--use-dynamic-batch-size packs micro-batches up to --max-tokens-per-gpu tokens: set it, e.g. 9216"
            )
        if args.log_probs_max_tokens_per_gpu is None:
            args.log_probs_max_tokens_per_gpu = args.max_tokens_per_gpu
    elif args.max_tokens_per_gpu is not None or args.log_probs_max_tokens_per_gpu is not None:
        raise TrainingFlagError(
            "--max-tokens-per-gpu / --log-probs-max-tokens-per-gpu are the token budget of "
            "--use-dynamic-batch-size: add it (or drop them to use --micro-batch-size)"
        )


def check_training_flags(args: argparse.Namespace, gpu: bool) -> None:
    """All but the refusals (checked first of all by ``validate_args``), in the order a user should
    hear about them."""
    resolve_train_backend(args, gpu)
    check_model_arch(args)
    check_reference(args)
    check_moe(args, gpu)
    check_runtime(args)
    check_optimizer(args)
    check_batching(args)
    problem = tensorboard_problem(TensorboardConfig.from_args(args))
    if problem:
        raise TrainingFlagError(problem)
