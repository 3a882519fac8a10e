"""Fill derived arguments and reject bad combinations, each with one line naming the flag and the fix.

Derived values are filled only where the user left ``None``: an explicit 0 is a choice,
never a missing value (slime once turned ``--rollout-num-gpus 0`` into the default).
"""

from __future__ import annotations

import argparse
import os

from vime.algorithms.estimators import estimator
from vime.utils.args.defaults import flag_value
from vime.utils.args.training_checks import TrainingFlagError, check_refused, check_training_flags


class ArgumentValidationError(ValueError):
    """A bad command line; the message is one line that names the flag and the fix."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ArgumentValidationError(message)


def has_gpu() -> bool:
    """Whether this machine has a usable CUDA GPU (torch imported only when asked)."""
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def check_backend_available(args: argparse.Namespace) -> None:
    """Refuse the Megatron backend at once on a machine without a GPU."""
    if flag_value(args, "train_backend") == "megatron" and not args.debug_rollout_only and not has_gpu():
        raise ArgumentValidationError(
            "--train-backend megatron needs an NVIDIA GPU and this machine has none: "
            "use --train-backend torch on the CPU"
        )


def _fill_cluster(args: argparse.Namespace) -> None:
    actor_ranks = args.actor_num_nodes * args.actor_num_gpus_per_node
    if args.colocate:
        args.offload_train = True if args.offload_train is None else args.offload_train
        args.offload_rollout = True if args.offload_rollout is None else args.offload_rollout
    if args.offload:
        args.offload_train = True if args.offload_train is None else args.offload_train
        args.offload_rollout = True if args.offload_rollout is None else args.offload_rollout
    args.offload_train = bool(args.offload_train)
    args.offload_rollout = bool(args.offload_rollout)
    if args.rollout_num_gpus is None:
        args.rollout_num_gpus = actor_ranks if (args.colocate and has_gpu()) else 0
    _require(args.rollout_num_gpus >= 0, f"--rollout-num-gpus must be >= 0, got {args.rollout_num_gpus}")
    _require(
        args.rollout_num_gpus_per_engine >= 1,
        f"--rollout-num-gpus-per-engine must be >= 1, got {args.rollout_num_gpus_per_engine}",
    )
    _require(
        args.rollout_num_gpus % args.rollout_num_gpus_per_engine == 0,
        f"--rollout-num-gpus {args.rollout_num_gpus} is not a multiple of --rollout-num-gpus-per-engine "
        f"{args.rollout_num_gpus_per_engine}: make it one",
    )
    if args.rollout_num_engines is None:
        if args.rollout_num_gpus > 0:
            args.rollout_num_engines = args.rollout_num_gpus // args.rollout_num_gpus_per_engine
        else:  # CPU engines need no GPU; a GPU machine with 0 rollout GPUs starts none (slime)
            args.rollout_num_engines = 0 if (has_gpu() or args.rollout_external_engine_addrs) else 1
    _require(
        args.rollout_num_engines >= 0, f"--rollout-num-engines must be >= 0, got {args.rollout_num_engines}"
    )
    if args.rollout_num_gpus > 0:
        _require(
            args.rollout_num_engines * args.rollout_num_gpus_per_engine <= args.rollout_num_gpus,
            f"--rollout-num-engines {args.rollout_num_engines} x {args.rollout_num_gpus_per_engine} GPUs each "
            f"exceeds --rollout-num-gpus {args.rollout_num_gpus}: lower one of them",
        )


def data_parallel_size(args: argparse.Namespace) -> int:
    """Training ranks divided by the model-parallel size (TP x PP x CP, Megatron only)."""
    ranks = args.actor_num_nodes * args.actor_num_gpus_per_node
    sizes = {
        "--tensor-model-parallel-size": args.tensor_model_parallel_size,
        "--pipeline-model-parallel-size": args.pipeline_model_parallel_size,
        "--context-parallel-size": args.context_parallel_size,
    }
    for flag, size in sizes.items():
        _require(size >= 1, f"{flag} must be >= 1, got {size}")
        _require(
            size == 1 or args.train_backend == "megatron",
            f"{flag} {size}: the torch backend is data-parallel only; drop it or use --train-backend megatron",
        )
    model_parallel = (
        args.tensor_model_parallel_size * args.pipeline_model_parallel_size * args.context_parallel_size
    )
    _require(
        ranks % model_parallel == 0,
        f"{ranks} training ranks do not split into model-parallel groups of {model_parallel} (TP x PP x CP): "
        f"change --actor-num-gpus-per-node or the parallel sizes",
    )
    return ranks // model_parallel


def _fill_batches(args: argparse.Namespace) -> None:
    _require(
        args.rollout_batch_size is not None, "--rollout-batch-size is required (prompts per step), e.g. 8"
    )
    for flag, value in (
        ("--rollout-batch-size", args.rollout_batch_size),
        ("--n-samples-per-prompt", args.n_samples_per_prompt),
        ("--micro-batch-size", args.micro_batch_size),
        ("--update-weights-interval", args.update_weights_interval),
        ("--actor-num-nodes", args.actor_num_nodes),
        ("--actor-num-gpus-per-node", args.actor_num_gpus_per_node),
    ):
        _require(value >= 1, f"{flag} must be >= 1, got {value}")
    samples = args.rollout_batch_size * args.n_samples_per_prompt
    if args.global_batch_size is None:
        steps = args.num_steps_per_rollout or 1
        _require(
            samples % steps == 0,
            f"--num-steps-per-rollout {steps} does not divide the {samples} samples of a rollout",
        )
        args.global_batch_size = samples // steps
    _require(args.global_batch_size >= 1, f"--global-batch-size must be >= 1, got {args.global_batch_size}")
    _require(
        samples % args.global_batch_size == 0,
        f"--global-batch-size {args.global_batch_size} does not divide the {samples} samples of a rollout "
        f"(--rollout-batch-size x --n-samples-per-prompt)",
    )
    dp = data_parallel_size(args)
    _require(
        args.global_batch_size % dp == 0,
        f"--global-batch-size {args.global_batch_size} does not split over {dp} data-parallel ranks: "
        f"make it a multiple of {dp}",
    )
    args.num_steps_per_rollout = samples // args.global_batch_size


def _check_schedule(args: argparse.Namespace) -> None:
    _require(
        args.num_rollout is not None or args.num_epoch is not None,
        "set --num-rollout (rollout steps) or --num-epoch (passes over --prompt-data)",
    )
    for flag, value in (
        ("--num-rollout", args.num_rollout),
        ("--save-interval", args.save_interval),
        ("--eval-interval", args.eval_interval),
        ("--num-epoch", args.num_epoch),
    ):
        if value is not None:
            _require(value >= 1, f"{flag} must be 1 or more, got {value}: with 0 there is nothing to run")
    if args.start_rollout_id is not None:
        _require(args.start_rollout_id >= 0, f"--start-rollout-id must be >= 0, got {args.start_rollout_id}")
    if args.eval_prompt_data is not None:
        _require(
            len(args.eval_prompt_data) % 2 == 0,
            "--eval-prompt-data takes pairs: NAME PATH [NAME PATH ...]",
        )
        if args.eval_interval is None:
            args.eval_interval = args.save_interval


def _check_algorithm(args: argparse.Namespace) -> None:
    _require(args.eps_clip > 0, f"--eps-clip must be > 0, got {args.eps_clip}")
    if args.eps_clip_high is None:
        args.eps_clip_high = args.eps_clip
    if args.eps_clip_c is not None:
        _require(args.eps_clip_c > 1.0, f"--eps-clip-c must be > 1 (dual-clip PPO), got {args.eps_clip_c}")
    if args.kl_ctl == "adaptive":
        _require(
            args.kl_target is not None and args.kl_horizon is not None,
            "--kl-ctl adaptive needs --kl-target and --kl-horizon",
        )
    _require(
        args.tis_clip > args.tis_clip_low,
        f"--tis-clip {args.tis_clip} must exceed --tis-clip-low {args.tis_clip_low}",
    )
    args.use_critic = estimator(args.advantage_estimator).needs_critic
    if args.critic_lr is None:
        args.critic_lr = args.lr
    _require(
        args.n_samples_per_prompt > 1
        or args.loss_type == "sft_loss"  # SFT compares nothing (slime's SFT launch keeps grpo, 1 sample)
        or not estimator(args.advantage_estimator).group_baseline,
        f"--advantage-estimator {args.advantage_estimator} compares samples of one prompt: "
        f"set --n-samples-per-prompt to 2 or more",
    )


def _check_modes(args: argparse.Namespace) -> None:
    if args.load_debug_rollout_data is not None:
        args.debug_train_only = True
    _require(
        not (args.debug_rollout_only and args.debug_train_only),
        "--debug-rollout-only and --debug-train-only (or --load-debug-rollout-data) exclude each other: pick one",
    )
    if not args.debug_train_only:
        _require(
            args.hf_checkpoint is not None,
            "--hf-checkpoint is required: the Hugging Face model dir the engines serve",
        )
    if args.hf_checkpoint is not None:
        _require(
            os.path.isdir(args.hf_checkpoint),
            f"--hf-checkpoint {args.hf_checkpoint} is not a directory: give a Hugging Face model dir",
        )


def _check_checkpoints(args: argparse.Namespace) -> None:
    """Resolve --load to one step and refuse a --save holding another run (vime.utils.checkpoint_dir)."""
    from vime.utils.checkpoint_dir import CheckpointDirError, check_save_dir, resolve_load

    if args.resume:
        _require(args.save is not None, "--resume continues the run in --save: give --save DIR")
        _require(
            args.load is None or os.path.realpath(args.load) == os.path.realpath(args.save),
            f"--resume loads --save {args.save} but --load is {args.load}: drop one of them",
        )
        args.load = args.save
    try:
        if args.load is not None:
            target = resolve_load(args.load, args.save)
            args.load, args.load_step = str(target.root), target.step
        if args.save is not None:
            check_save_dir(args.save, args.load)
    except CheckpointDirError as exc:
        raise ArgumentValidationError(str(exc)) from None
    if args.load_step is not None and args.num_rollout is not None and args.start_rollout_id is None:
        _require(
            args.load_step + 1 < args.num_rollout,
            f"--load {args.load} resumes after step {args.load_step} and --num-rollout is {args.num_rollout}: "
            f"nothing is left to train; raise --num-rollout above {args.load_step + 1}",
        )


def validate_args(args: argparse.Namespace) -> argparse.Namespace:
    """Fill derived values and check everything; raises ``ArgumentValidationError`` (one line)."""
    check_backend_available(args)
    try:
        check_refused(args)
        _check_modes(args)
        check_training_flags(args, has_gpu())
    except TrainingFlagError as exc:
        raise ArgumentValidationError(str(exc)) from None
    _check_checkpoints(args)
    _fill_cluster(args)
    _fill_batches(args)
    _fill_rollout_eval_debug(args)
    _check_schedule(args)
    _check_algorithm(args)
    _check_training_modes(args)
    if not args.debug_train_only:
        _check_engine_layer(args)
        _check_start_order(args)
    _fill_weight_sync(args)
    return args


def _fill_rollout_eval_debug(args: argparse.Namespace) -> None:
    """Context limits, the eval datasets (``--eval-config``), the debug-data templates and the rollout
    flags with a backend condition (their rules live beside their flags)."""
    from vime.utils.args.debug import fill_debug_paths
    from vime.utils.args.fully_async import check_fully_async
    from vime.utils.args.rollout import check_keep_old_actor, fill_context_lengths
    from vime.utils.eval_config import fill_eval_datasets

    checks = (
        fill_context_lengths,
        fill_debug_paths,
        check_keep_old_actor,
        check_fully_async,
        fill_eval_datasets,
    )
    for fill in checks:
        try:
            fill(args)
        except ValueError as exc:
            raise ArgumentValidationError(str(exc)) from None


def _check_training_modes(args: argparse.Namespace) -> None:
    """LoRA, on-policy distillation and the loss type (their rules live beside their code)."""
    from vime.algorithms.loss_select import validate_loss_args
    from vime.algorithms.opd import validate_opd_args
    from vime.utils.lora_settings import validate_lora_args

    for check in (validate_lora_args, validate_opd_args, validate_loss_args):
        try:
            check(args)
        except ValueError as exc:
            raise ArgumentValidationError(str(exc)) from None


def _fill_weight_sync(args: argparse.Namespace) -> None:
    from vime.utils.args.weight_sync import resolve_weight_sync

    try:
        args.weight_sync = resolve_weight_sync(args, has_gpu())
    except ValueError as exc:
        raise ArgumentValidationError(str(exc)) from exc


def _check_start_order(args: argparse.Namespace) -> None:
    """Colocated engines started beside the trainer need a memory share that leaves it room."""
    from vime.utils.args.start_order import StartOrder

    _require((why := StartOrder.from_args(args, on_gpu=has_gpu()).refusal()) is None, why or "")


def _check_engine_layer(args: argparse.Namespace) -> None:
    """Run the ``--vllm-*`` / ``--router-*`` values through vLLM's and the router's own parsers."""
    from vime.backends.vllm_utils.arguments import router_cli_args, vllm_server_cli_args

    try:
        vllm_server_cli_args(args, on_cpu=not has_gpu())
        router_cli_args(args)
    except ValueError as exc:
        raise ArgumentValidationError(str(exc).splitlines()[0]) from exc
