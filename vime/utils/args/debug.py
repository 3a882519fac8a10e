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
        help="Train on this fraction of each loaded rollout (its first and last samples, as slime does).",
    )
    g.add_argument(
        "--save-debug-train-data",
        type=str,
        default=None,
        help="Write what each step trained on (log-probs, advantages, returns per sample, all ranks in one "
        "file) to this path template, e.g. /tmp/train_{rollout_id}.pt.",
    )
    g.add_argument(
        "--dump-details",
        type=str,
        default=None,
        help="Directory for everything a post-hoc look needs: rollout_data/{rollout_id}.pkl, "
        "train_data/{rollout_id}.pt (unless set on their own) and the tokenizer.",
    )
    g.add_argument(
        "--check-weight-update-equal",
        action="store_true",
        default=False,
        help="Check the weight path: digest the engines' weights at start, zero them, and after the first "
        "update require every tensor to match again (stops the run in one line if not).",
    )


def fill_debug_paths(args: argparse.Namespace) -> None:
    """slime's ``--dump-details`` templates (where not set on their own) and the debug flags' rules;
    raises ``ValueError`` with one line."""
    if args.dump_details is not None:
        root = args.dump_details.rstrip("/")
        if args.save_debug_rollout_data is None:
            args.save_debug_rollout_data = f"{root}/rollout_data/{{rollout_id}}.pkl"
        if args.save_debug_train_data is None:
            args.save_debug_train_data = f"{root}/train_data/{{rollout_id}}.pt"
    if args.save_debug_train_data is not None and args.save_debug_train_data == args.save_debug_rollout_data:
        raise ValueError(
            "--save-debug-train-data and --save-debug-rollout-data name the same file: give them different paths"
        )
    subsample = args.load_debug_rollout_data_subsample
    if subsample is not None:
        if args.load_debug_rollout_data is None:
            raise ValueError(
                "--load-debug-rollout-data-subsample thins data read with --load-debug-rollout-data: give that too"
            )
        if not 0 < subsample <= 1:
            raise ValueError(f"--load-debug-rollout-data-subsample must be in (0, 1], got {subsample}")
    if args.check_weight_update_equal:
        if args.debug_rollout_only or args.debug_train_only:
            raise ValueError(
                "--check-weight-update-equal checks a weight update from the trainer to the engines: "
                "drop it or the --debug-* mode (which runs one side only)"
            )
        if args.load is not None:
            raise ValueError(
                f"--check-weight-update-equal compares the first update with the --hf-checkpoint the engines "
                f"start from, and --load {args.load} starts the trainer from other weights: drop one of them"
            )
