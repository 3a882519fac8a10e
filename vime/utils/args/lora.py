"""LoRA: low-rank adapters trained instead of the full weights, and served by vLLM's own LoRA support.

Flag names are those of slime's FSDP LoRA and of the vLLM fork of slime: ``--lora-rank`` (0: off),
``--lora-alpha``, ``--lora-dropout``, ``--target-modules`` (``all-linear`` or a comma list of Hugging
Face module names), ``--exclude-modules``, ``--lora-adapter-path`` (start from a saved adapter).
``--lora-sync`` is vime's: what travels to the engines after each step.
"""

from __future__ import annotations

import argparse

ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
LORA_SYNC_MODES = ("auto", "adapter", "merged")
# vLLM accepts these as --max-lora-rank (vllm/config/lora.py MaxLoRARanks)
VLLM_MAX_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
ADAPTER_NAME = "vime_lora"  # the name engines serve the trained adapter under (requests' "model")


def add_lora_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("LoRA")
    g.add_argument(
        "--lora-rank",
        type=int,
        default=0,
        help="Rank of the LoRA adapters; 0 trains the full weights. Base weights stay frozen, "
        "checkpoints hold the adapter alone.",
    )
    g.add_argument("--lora-alpha", type=int, default=16, help="LoRA scaling: the update is alpha/rank * B A.")
    g.add_argument("--lora-dropout", type=float, default=0.0, help="Dropout on the adapters' input.")
    g.add_argument(
        "--target-modules",
        type=str,
        default="all-linear",
        help="Modules that get adapters: all-linear, or a comma list of Hugging Face names "
        "(q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj).",
    )
    g.add_argument(
        "--exclude-modules",
        type=str,
        default=None,
        help="Comma list of modules left out of --target-modules.",
    )
    g.add_argument(
        "--lora-adapter-path",
        type=str,
        default=None,
        help="Start from this saved adapter (PEFT format: adapter_config.json + adapter_model.safetensors).",
    )
    g.add_argument(
        "--lora-sync",
        choices=LORA_SYNC_MODES,
        default="auto",
        help="vime: after each step send the adapter alone (engines serve base + adapter through vLLM's "
        "LoRA support) or the merged full weights. auto: adapter on engines vime starts, merged on "
        "--rollout-external-engine-addrs engines.",
    )
