"""Prompt data and batch sizes."""

from __future__ import annotations

import argparse
import json

from vime.utils.mask_utils import LOSS_MASK_TYPES


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("data")
    g.add_argument("--num-rollout", type=int, default=None, help="Rollout steps; unset: from --num-epoch.")
    g.add_argument(
        "--num-epoch", type=int, default=None, help="Passes over --prompt-data when --num-rollout is unset."
    )
    g.add_argument(
        "--disable-rollout-global-dataset",
        action="store_false",
        dest="rollout_global_dataset",
        default=True,
        help="No vime data source: the rollout function brings its own prompts (no data-source state in checkpoints).",
    )
    g.add_argument(
        "--data-source-path",
        type=str,
        default="vime.rollout.data_source.RolloutDataSourceWithBuffer",
        help="Class (args) -> data source handing out prompt groups (see tests/contract/test_data_source_contract.py).",
    )
    g.add_argument("--prompt-data", type=str, default=None, help="JSONL or Parquet prompts.")
    g.add_argument(
        "--apply-chat-template",
        action="store_true",
        default=False,
        help="Wrap each prompt in the tokenizer's chat template as a user message.",
    )
    g.add_argument(
        "--apply-chat-template-kwargs",
        type=json.loads,
        default={},
        help="JSON object of extra arguments to apply_chat_template, e.g. '{\"enable_thinking\": false}'.",
    )
    g.add_argument(
        "--input-key", type=str, default="input", help="Key of the prompt in each --prompt-data row."
    )
    g.add_argument(
        "--label-key",
        type=str,
        default=None,
        help="Key of the label (ground truth) in each row; unset: no labels.",
    )
    g.add_argument(
        "--metadata-key",
        type=str,
        default="metadata",
        help="Key of a per-row metadata dict passed on to hooks in Sample.metadata.",
    )
    g.add_argument(
        "--tool-key", type=str, default="tools", help="Key of per-row tool definitions for the chat template."
    )
    g.add_argument(
        "--loss-mask-type",
        choices=LOSS_MASK_TYPES,
        default="qwen",
        help="SFT loss masks (slime's): qwen / qwen3 / qwen3_5 train the assistant turns the chat template "
        "renders; distill_qwen the last message's raw text after the first message's prompt.",
    )
    g.add_argument("--start-rollout-id", type=int, default=None, help="Unset: from --load, else 0.")
    g.add_argument(
        "--rollout-batch-size", type=int, default=None, help="Prompts per rollout step (required)."
    )
    g.add_argument(
        "--n-samples-per-prompt", type=int, default=1, help="Responses generated per prompt (a GRPO group)."
    )
    g.add_argument(
        "--global-batch-size",
        type=int,
        default=None,
        help="Samples per optimizer step; unset: all samples of a rollout (or per --num-steps-per-rollout).",
    )
    g.add_argument(
        "--num-steps-per-rollout",
        type=int,
        default=None,
        help="Optimizer steps per rollout step (sets --global-batch-size when that is unset).",
    )
    g.add_argument(
        "--micro-batch-size",
        type=int,
        default=1,
        help="Samples per forward/backward pass; gradients accumulate up to --global-batch-size.",
    )
    g.add_argument(
        "--balance-data",
        action="store_true",
        default=False,
        help="Deal micro-batches to the data-parallel ranks balancing their cost (padded positions), not round robin.",
    )
    g.add_argument(
        "--use-dynamic-batch-size",
        action="store_true",
        default=False,
        help="Pack each step's samples into micro-batches of at most --max-tokens-per-gpu positions (padding included) instead of --micro-batch-size samples.",
    )
    g.add_argument(
        "--max-tokens-per-gpu",
        type=int,
        default=None,
        help="Token budget of a training micro-batch under --use-dynamic-batch-size (a longer sample gets one of its own).",
    )
    g.add_argument(
        "--log-probs-max-tokens-per-gpu",
        type=int,
        default=None,
        help="Token budget of the log-prob (forward-only) passes under --use-dynamic-batch-size (default: --max-tokens-per-gpu).",
    )
