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
    g.add_argument("--eval-config", type=str, default=None)
    g.add_argument("--skip-eval-before-train", action="store_true", default=False)
    g.add_argument("--eval-input-key", type=str, default=None)
    g.add_argument("--eval-label-key", type=str, default=None)
    g.add_argument("--eval-tool-key", type=str, default=None)
    g.add_argument("--n-samples-per-eval-prompt", type=int, default=1)
    g.add_argument("--eval-temperature", type=float, default=None)
    g.add_argument("--eval-top-p", type=float, default=None)
    g.add_argument("--eval-top-k", type=int, default=None)
    g.add_argument("--eval-max-response-len", type=int, default=None)
    g.add_argument("--eval-max-prompt-len", type=int, default=None)
    g.add_argument("--eval-min-new-tokens", type=int, default=None)
    g.add_argument("--eval-max-context-len", type=int, default=None)
