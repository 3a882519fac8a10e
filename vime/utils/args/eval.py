"""Evaluation rollouts."""

from __future__ import annotations

import argparse


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("eval")
    g.add_argument("--eval-function-path", type=str, default=None, help="Unset: the rollout function.")
    g.add_argument("--eval-interval", type=int, default=None, help="Evaluate every N rollout steps.")
    g.add_argument(
        "--eval-prompt-data",
        type=str,
        nargs="+",
        default=None,
        help="Pairs of name and path: --eval-prompt-data aime /data/aime.jsonl gsm8k /data/gsm8k.jsonl",
    )
    g.add_argument(
        "--eval-config",
        type=str,
        default=None,
        help="slime's YAML of eval datasets (eval.defaults, eval.datasets with per-dataset keys, sampling, "
        "rm_type, metadata_overrides); overrides --eval-prompt-data. See docs/training.md.",
    )
    g.add_argument(
        "--skip-eval-before-train",
        action="store_true",
        default=False,
        help="Do not evaluate the starting weights before step 0.",
    )
    g.add_argument(
        "--eval-input-key", type=str, default=None, help="Prompt key of the eval data (default: --input-key)."
    )
    g.add_argument(
        "--eval-label-key", type=str, default=None, help="Label key of the eval data (default: --label-key)."
    )
    g.add_argument(
        "--eval-tool-key",
        type=str,
        default=None,
        help="Tool-definitions key of the eval data (default: --tool-key).",
    )
    g.add_argument(
        "--n-samples-per-eval-prompt",
        type=int,
        default=1,
        help="Responses per eval prompt (their rewards are averaged).",
    )
    g.add_argument(
        "--eval-temperature",
        type=float,
        default=None,
        help="Sampling temperature of evaluation (default: --rollout-temperature).",
    )
    g.add_argument(
        "--eval-top-p", type=float, default=None, help="Top-p of evaluation (default: --rollout-top-p)."
    )
    g.add_argument(
        "--eval-top-k", type=int, default=None, help="Top-k of evaluation (default: --rollout-top-k)."
    )
    g.add_argument(
        "--eval-max-response-len",
        type=int,
        default=None,
        help="Most tokens per eval response (default: --rollout-max-response-len).",
    )
    g.add_argument(
        "--eval-max-prompt-len",
        type=int,
        default=None,
        help="Drop eval prompts longer than this many tokens.",
    )
    g.add_argument(
        "--eval-min-new-tokens", type=int, default=None, help="Fewest tokens per eval response (min_tokens)."
    )
    g.add_argument(
        "--eval-max-context-len",
        type=int,
        default=None,
        help="Most tokens of eval prompt and response together (default: --rollout-max-context-len).",
    )
    parser.set_defaults(eval_datasets=None)  # validation resolves the datasets (vime/utils/eval_config.py)
