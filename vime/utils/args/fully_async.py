"""Fully asynchronous training (``train_async.py --fully-async``): its flags and their rules.

``--max-policy-version-lag`` is slime's name for the bound (THUDM/slime pull request 2278, open at
the time of writing; same meaning: a sample is trained on when the trainer's version minus the
sample's is at most N, 0 meaning current-policy only, unset meaning no bound).
"""

from __future__ import annotations

import argparse

STALE_ACTIONS = ("regenerate", "drop")
DEFAULT_ROLLOUT_FUNCTION = "vime.rollout.vllm_rollout.generate_rollout"
FULLY_ASYNC_ROLLOUT_FUNCTION = "vime.rollout.async_rollout.generate_rollout_fully_async"


def add_fully_async_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("fully asynchronous training (train_async.py --fully-async)")
    g.add_argument(
        "--fully-async",
        action="store_true",
        default=False,
        help="vime: train_async.py generates continuously; the trainer takes each batch as it finishes "
        "and pushes weights into the running engines without aborting requests (docs/async.md).",
    )
    g.add_argument(
        "--max-policy-version-lag",
        type=int,
        default=None,
        help="--fully-async: train on no sample whose oldest trained token is more than N weight "
        "versions behind the trainer (0: current weights only; unset: no bound).",
    )
    g.add_argument(
        "--stale-sample-action",
        choices=STALE_ACTIONS,
        default=None,
        help="vime: a group beyond --max-policy-version-lag is generated again from its prompts "
        "(regenerate, the default) or discarded (drop); with --partial-rollout "
        "--mask-offpolicy-in-partial-rollout its stale tokens leave the loss first.",
    )


def check_fully_async(args: argparse.Namespace) -> None:
    """Refuse what the fully-async mode cannot honour and route its rollout (``ValueError``, one line)."""
    if not args.fully_async:
        if args.max_policy_version_lag is not None:
            raise ValueError(
                "--max-policy-version-lag bounds the samples of --fully-async: add --fully-async (train_async.py)"
            )
        if args.stale_sample_action is not None:
            raise ValueError(
                "--stale-sample-action applies to --fully-async: add --fully-async (train_async.py)"
            )
        return
    if args.max_policy_version_lag is not None and args.max_policy_version_lag < 0:
        raise ValueError(f"--max-policy-version-lag must be 0 or more, got {args.max_policy_version_lag}")
    if args.stale_sample_action is not None and args.max_policy_version_lag is None:
        raise ValueError(
            "--stale-sample-action says what happens beyond --max-policy-version-lag: give the bound too"
        )
    if args.stale_sample_action is None:
        args.stale_sample_action = "regenerate"
    if args.rollout_function_path not in (DEFAULT_ROLLOUT_FUNCTION, FULLY_ASYNC_ROLLOUT_FUNCTION):
        raise ValueError(
            f"--fully-async generates with vime's own producer; --rollout-function-path "
            f"{args.rollout_function_path} would replace it: put per-sample logic in "
            "--custom-generate-function-path / --custom-rm-path, or drop --fully-async"
        )
    if args.keep_old_actor:
        raise ValueError(
            "--keep-old-actor picks one weight version per sample; with --fully-async a sample's tokens "
            "may come from several: use --use-tis (the engine's own log-probs of every token)"
        )
    if args.colocate and (args.offload_train or args.offload_rollout):
        raise ValueError(
            "--fully-async generates while the trainer trains: colocated, keep both resident with "
            "--no-offload-train --no-offload-rollout, or use train.py"
        )
    args.rollout_function_path = FULLY_ASYNC_ROLLOUT_FUNCTION
