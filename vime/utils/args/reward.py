"""Reward model: which verifier, or a remote/custom reward."""

from __future__ import annotations

import argparse


def add_reward_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("reward")
    g.add_argument(
        "--rm-type", type=str, default=None, help="Reward hub name: math, deepscaler, dapo, f1, gpqa, ..."
    )
    g.add_argument("--reward-key", type=str, default=None, help="Key of a dict reward used for training.")
    g.add_argument(
        "--eval-reward-key",
        type=str,
        default=None,
        help="Key of a dict reward reported in eval (default: --reward-key).",
    )
    g.add_argument("--group-rm", action="store_true", default=False, help="Score a whole group at once.")
    g.add_argument(
        "--rm-url", type=str, default=None, help="URL of a remote reward service (--rm-type remote)."
    )
    g.add_argument("--rm-max-retries", type=int, default=5, help="vime: attempts per remote reward request.")
    g.add_argument("--rm-retry-backoff-s", type=float, default=1.0, help="vime: first retry delay (doubles).")
    g.add_argument("--rm-timeout-s", type=float, default=120.0, help="vime: remote reward request timeout.")
    g.add_argument(
        "--custom-rm-path",
        type=str,
        default=None,
        help="Hook [async] fn(args, sample) -> number (a list per group with --group-rm); checked before the run starts.",
    )
    g.add_argument(
        "--custom-reward-post-process-path",
        type=str,
        default=None,
        help="Hook fn(args, samples) -> (raw_rewards, rewards) replacing vime's group normalization.",
    )
    g.add_argument(
        "--custom-convert-samples-to-train-data-path",
        type=str,
        default=None,
        help="Hook fn(args, samples) -> train data dict replacing vime's conversion.",
    )
