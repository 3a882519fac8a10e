"""How weights travel from the trainer to the rollout engines: one flag, a default from the placement.

``disk``: a Hugging Face directory the engines reload (the CPU path and the fallback everywhere).
``ipc``: CUDA IPC handles of the trainer's GPU buckets (trainer and engine on the same GPU, --colocate).
``nccl``: an NCCL broadcast from trainer rank 0 to every engine worker (engines on their own GPUs).
"""

from __future__ import annotations

import argparse
import json

WEIGHT_SYNC_MODES = ("auto", "disk", "ipc", "nccl")


def add_weight_sync_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("weight sync")
    g.add_argument(
        "--weight-sync",
        choices=WEIGHT_SYNC_MODES,
        default="auto",
        help="How trained weights reach the engines. auto: disk without a GPU or with external "
        "engines, ipc when --colocate, else nccl.",
    )
    g.add_argument(
        "--weight-sync-api",
        choices=("auto", "vime", "weight-transfer", "collective-rpc"),
        default="auto",
        help="ipc only: vime's /vime/update_weights route (one call per update; the engine copies from "
        "the trainer's parameters in place), vLLM's weight-transfer routes (/update_weights, engines "
        "started with --weight-transfer-config ipc) or vime's worker extension over /collective_rpc. "
        "auto: vime's route on servers vime started, else the weight-transfer routes when the server "
        "lists them in /openapi.json.",
    )
    g.add_argument(
        "--rollout-sleep-level",
        type=int,
        choices=(1, 2),
        default=1,
        help="vLLM /sleep level while training runs (--offload-rollout): 1 keeps a CPU copy of the "
        "weights, 2 drops them (every update resends them all anyway).",
    )


def resolve_weight_sync(args: argparse.Namespace, gpus: bool) -> str:
    """The mode ``--weight-sync`` names, ``auto`` made concrete; raises ValueError (one line) on a bad mix."""
    mode = getattr(args, "weight_sync", "auto") or "auto"
    external = bool(getattr(args, "rollout_external_engine_addrs", None))
    colocate = bool(getattr(args, "colocate", False))
    if mode == "auto":
        if not gpus or external:
            return "disk"
        return "ipc" if colocate else "nccl"
    if mode in ("ipc", "nccl") and not gpus:
        raise ValueError(f"--weight-sync {mode} needs NVIDIA GPUs and this machine has none: use disk")
    if mode == "ipc" and not colocate:
        raise ValueError(
            "--weight-sync ipc needs the engines on the trainer's GPUs: add --colocate, or use nccl"
        )
    if mode in ("ipc", "nccl") and external:
        raise ValueError(
            f"--weight-sync {mode} cannot reach --rollout-external-engine-addrs engines: use disk"
        )
    return mode


def engine_flags_for(mode: str, offload_rollout: bool, gpus: bool) -> list[list[str]]:
    """``vllm serve`` flags a mode needs, one list per flag (vime adds those the user did not give)."""
    flags: list[list[str]] = []
    if mode in ("ipc", "nccl"):
        flags.append(["--weight-transfer-config", json.dumps({"backend": mode})])
    if offload_rollout and gpus:
        flags.append(["--enable-sleep-mode"])
    return flags
