"""Prompt data and batch sizes."""

from __future__ import annotations

import argparse
import json


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("data")
    g.add_argument("--num-rollout", type=int, default=None, help="Rollout steps; unset: from --num-epoch.")
    g.add_argument("--num-epoch", type=int, default=None)
    g.add_argument(
        "--disable-rollout-global-dataset",
        action="store_false",
        dest="rollout_global_dataset",
        default=True,
    )
    g.add_argument(
        "--data-source-path", type=str, default="vime.rollout.data_source.RolloutDataSourceWithBuffer"
    )
    g.add_argument("--prompt-data", type=str, default=None, help="JSONL or Parquet prompts.")
    g.add_argument("--apply-chat-template", action="store_true", default=False)
    g.add_argument("--apply-chat-template-kwargs", type=json.loads, default={})
    g.add_argument("--input-key", type=str, default="input")
    g.add_argument("--label-key", type=str, default=None)
    g.add_argument("--metadata-key", type=str, default="metadata")
    g.add_argument("--tool-key", type=str, default="tools")
    g.add_argument("--multimodal-keys", type=json.loads, default=None)
    g.add_argument("--start-rollout-id", type=int, default=None, help="Unset: from --load, else 0.")
    g.add_argument(
        "--rollout-batch-size", type=int, default=None, help="Prompts per rollout step (required)."
    )
    g.add_argument("--n-samples-per-prompt", type=int, default=1)
    g.add_argument(
        "--global-batch-size",
        type=int,
        default=None,
        help="Samples per optimizer step; unset: all samples of a rollout (or per --num-steps-per-rollout).",
    )
    g.add_argument("--num-steps-per-rollout", type=int, default=None)
    g.add_argument("--micro-batch-size", type=int, default=1)
    g.add_argument("--balance-data", action="store_true", default=False)
    g.add_argument("--use-dynamic-batch-size", action="store_true", default=False)
    g.add_argument("--max-tokens-per-gpu", type=int, default=None)
    g.add_argument("--log-probs-max-tokens-per-gpu", type=int, default=None)
