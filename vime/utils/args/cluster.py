"""Cluster sizing: how many GPUs (or CPU ranks) train, how many serve rollouts, colocated or not."""

from __future__ import annotations

import argparse


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("cluster")
    g.add_argument("--actor-num-nodes", type=int, default=1, help="Nodes for the training actor.")
    g.add_argument(
        "--actor-num-gpus-per-node",
        type=int,
        default=1,
        help="GPUs per node for the training actor; on a machine without GPUs, training ranks per node.",
    )
    g.add_argument(
        "--rollout-num-gpus",
        type=int,
        default=None,
        help="GPUs for the rollout engines. Unset: all training GPUs when --colocate, else 0. "
        "An explicit 0 stays 0 (no local GPU engines: CPU engines or external ones).",
    )
    g.add_argument(
        "--rollout-num-gpus-per-engine", type=int, default=1, help="GPUs per vLLM engine (its TP size)."
    )
    g.add_argument(
        "--rollout-num-engines",
        type=int,
        default=None,
        help="vime: number of local vLLM engines. Unset: rollout GPUs / GPUs per engine, or 1 on a "
        "machine without GPUs (CPU engines take no GPU). 0 means none.",
    )
    g.add_argument("--num-gpus-per-node", type=int, default=8, help="GPUs per node for rollout placement.")
    g.add_argument(
        "--colocate",
        action="store_true",
        default=False,
        help="Training and rollout share the same GPUs (implies --offload-train and --offload-rollout).",
    )
    g.add_argument(
        "--offload", action="store_true", default=False, help="--offload-train plus --offload-rollout."
    )
    g.add_argument(
        "--offload-train",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="Move training weights/optimizer off the accelerator while rollout runs.",
    )
    g.add_argument(
        "--offload-rollout",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="Put the rollout engines to sleep while training runs (GPU only in vLLM).",
    )
