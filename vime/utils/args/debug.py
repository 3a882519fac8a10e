"""Debugging: one side alone, rollout data saved and replayed."""

from __future__ import annotations

import argparse


def add_debug_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("debug")
    g.add_argument(
        "--debug-rollout-only", action="store_true", default=False, help="Run rollouts, no training."
    )
    g.add_argument("--debug-train-only", action="store_true", default=False, help="Train, no engines.")
    g.add_argument(
        "--save-debug-rollout-data",
        type=str,
        default=None,
        help="Write each rollout's data to this path template, e.g. /tmp/rollout_{rollout_id}.pt.",
    )
    g.add_argument(
        "--load-debug-rollout-data",
        type=str,
        default=None,
        help="Read rollout data from this path template instead of generating (implies --debug-train-only).",
    )
    g.add_argument(
        "--load-debug-rollout-data-subsample",
        type=float,
        default=None,
        help="slime's flag, accepted for compatibility; vime does not use it yet.",
    )
    g.add_argument(
        "--save-debug-train-data",
        type=str,
        default=None,
        help="slime's flag, accepted for compatibility; vime does not use it yet.",
    )
    g.add_argument(
        "--dump-details",
        type=str,
        default=None,
        help="slime's flag, accepted for compatibility; vime does not use it yet.",
    )
    g.add_argument(
        "--check-weight-update-equal",
        action="store_true",
        default=False,
        help="slime's flag, accepted for compatibility; vime does not use it yet.",
    )
