"""The training-backend layer: which trainer, its optimizer and parallelism.

Optimizer and batch flags keep Megatron's names (slime forwards them to Megatron), so a
command line moves between ``--train-backend torch`` and ``megatron`` unchanged.
"""

from __future__ import annotations

import argparse

TRAIN_BACKENDS = ("torch", "megatron")


def add_train_backend_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("training backend")
    g.add_argument("--train-backend", choices=TRAIN_BACKENDS, default="torch", help="megatron needs a GPU.")
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
    g.add_argument("--weight-decay", type=float, default=0.0, help="AdamW weight decay.")
    g.add_argument("--adam-beta1", type=float, default=0.9, help="AdamW beta1.")
    g.add_argument("--adam-beta2", type=float, default=0.999, help="AdamW beta2.")
    g.add_argument("--adam-eps", type=float, default=1e-8, help="AdamW epsilon.")
    g.add_argument(
        "--clip-grad", type=float, default=1.0, help="Clip the global gradient norm to this (0: no clipping)."
    )
    g.add_argument("--seed", type=int, default=1234, help="Seed of the trainer (torch, numpy, random).")
    g.add_argument("--bf16", action="store_true", default=False, help="Train in bfloat16 (default float32).")
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
    # model parallelism (Megatron's names; the torch backend is data-parallel only)
    g.add_argument("--tensor-model-parallel-size", type=int, default=1, help="megatron: TP size.")
    g.add_argument("--pipeline-model-parallel-size", type=int, default=1, help="megatron: PP size.")
    g.add_argument("--context-parallel-size", type=int, default=1, help="megatron: CP size.")
