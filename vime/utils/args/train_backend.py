"""The training-backend layer: which trainer, its optimizer and parallelism.

Optimizer and batch flags keep Megatron's names (slime forwards them to Megatron), so a
command line moves between ``--train-backend torch`` and ``megatron`` unchanged. Megatron's
model-architecture and runtime flags are groups of their own (``model_arch``, ``megatron_runtime``).
"""

from __future__ import annotations

import argparse

from vime.utils.args.megatron_runtime import add_megatron_runtime_arguments
from vime.utils.args.model_arch import add_model_arch_arguments

TRAIN_BACKENDS = ("auto", "torch", "megatron")


def add_train_backend_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("training backend")
    g.add_argument(
        "--train-backend",
        choices=TRAIN_BACKENDS,
        default="auto",
        help="auto: megatron on a machine with an NVIDIA GPU and megatron-core (slime's trainer), "
        "else torch. megatron needs a GPU.",
    )
    g.add_argument(
        "--lr", type=float, default=1e-6, help="Learning rate of the policy (peak, after warm-up)."
    )
    g.add_argument(
        "--min-lr",
        type=float,
        default=0.0,
        help="Learning rate at the end of the decay (--lr-decay-style linear / cosine).",
    )
    g.add_argument(
        "--lr-warmup-iters", type=int, default=0, help="Optimizer steps of linear warm-up from 0 to --lr."
    )
    g.add_argument(
        "--lr-decay-style",
        choices=["constant", "linear", "cosine"],
        default="constant",
        help="How the learning rate falls after warm-up, over all optimizer steps of the run.",
    )
    g.add_argument(
        "--lr-warmup-fraction",
        type=float,
        default=None,
        help="Warm-up as a fraction of all optimizer steps of the run (instead of --lr-warmup-iters).",
    )
    g.add_argument(
        "--optimizer",
        choices=["adam", "sgd"],
        default="adam",
        help="adam: AdamW (decoupled weight decay); sgd: SGD with --sgd-momentum.",
    )
    g.add_argument("--sgd-momentum", type=float, default=0.9, help="Momentum of --optimizer sgd.")
    g.add_argument("--weight-decay", type=float, default=0.0, help="AdamW weight decay.")
    g.add_argument("--adam-beta1", type=float, default=0.9, help="AdamW beta1.")
    g.add_argument("--adam-beta2", type=float, default=0.999, help="AdamW beta2.")
    g.add_argument("--adam-eps", type=float, default=1e-8, help="AdamW epsilon.")
    g.add_argument(
        "--clip-grad", type=float, default=1.0, help="Clip the global gradient norm to this (0: no clipping)."
    )
    g.add_argument("--seed", type=int, default=1234, help="Seed of the trainer (torch, numpy, random).")
    g.add_argument(
        "--bf16",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="Train in bfloat16. Unset: bf16 with --train-backend megatron (slime always trains Megatron "
        "in bf16), float32 with torch.",
    )
    g.add_argument(
        "--distributed-backend", type=str, default=None, help="Unset: nccl with GPUs, gloo without."
    )
    g.add_argument(
        "--torch-dist-strategy",
        choices=["auto", "fsdp2", "ddp", "none"],
        default="auto",
        help="vime (torch backend): auto = none for one rank, FSDP2 where it works, else DDP.",
    )
    g.add_argument(
        "--gradient-checkpointing",
        action="store_true",
        default=False,
        help="Recompute activations in the backward pass: less memory, more time.",
    )
    g.add_argument(
        "--use-distributed-optimizer",
        action="store_const",
        const=True,
        default=True,
        help="megatron: shard the optimizer state over data-parallel ranks. Always on, as slime forces it.",
    )
    g.add_argument(
        "--optimizer-cpu-offload",
        action="store_true",
        default=False,
        help="megatron: keep the optimizer state and its update on the CPU (megatron-core's hybrid optimizer).",
    )
    g.add_argument(
        "--optimizer-offload-fraction",
        type=float,
        default=1.0,
        help="megatron: fraction of the optimizer state on the CPU under --optimizer-cpu-offload.",
    )
    g.add_argument(
        "--overlap-cpu-optimizer-d2h-h2d",
        action="store_true",
        default=False,
        help="megatron: overlap the gradient / parameter copies of --optimizer-cpu-offload with compute.",
    )
    g.add_argument(
        "--use-precision-aware-optimizer",
        action="store_true",
        default=False,
        help="megatron: Transformer Engine's FusedAdam with its own main weights; without Transformer "
        "Engine, megatron-core's Adam with fp32 main weights and fp32 moments (the same update: "
        "vime warns which one runs).",
    )
    g.add_argument(
        "--accumulate-allreduce-grads-in-fp32",
        action="store_true",
        default=False,
        help="Accumulate and reduce gradients in fp32 (megatron: fp32 gradient buffers; without it they "
        "are in the training dtype).",
    )
    # model parallelism (Megatron's names; the torch backend is data-parallel only)
    g.add_argument("--tensor-model-parallel-size", type=int, default=1, help="megatron: TP size.")
    g.add_argument("--pipeline-model-parallel-size", type=int, default=1, help="megatron: PP size.")
    g.add_argument("--context-parallel-size", type=int, default=1, help="megatron: CP size.")
    add_model_arch_arguments(parser)
    add_megatron_runtime_arguments(parser)
