"""slime's hooks that replace pieces of the loss and of the rollout, loaded by dotted path.

Each has slime's signature and a contract in ``tests/contract/``; vime's default passes it
(``vime/backends/loss_hooks.py``, ``vime/rollout/sample_hooks.py``). ``--loss-type`` and
``--custom-loss-function-path`` live with the algorithm flags.
"""

from __future__ import annotations

import argparse


def add_loss_hook_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("loss and rollout hooks")
    g.add_argument(
        "--custom-advantage-function-path",
        type=str,
        default=None,
        help="Replaces the advantage estimator: fn(args, rollout_data) sets rollout_data['advantages'] and "
        "['returns'] (per-sample tensors) in place; rollout_data has log_probs, ref_log_probs, rewards, "
        "values, response_lengths, loss_masks, total_lengths, kl.",
    )
    g.add_argument(
        "--disable-compute-advantages-and-returns",
        action="store_false",
        dest="compute_advantages_and_returns",
        default=True,
        help="Skip advantages and returns (SFT, or a custom loss that needs none).",
    )
    g.add_argument(
        "--custom-tis-function-path",
        type=str,
        default=None,
        help="With --use-tis, replaces truncated importance sampling: fn(args, *, pg_loss, "
        "train_log_probs, rollout_log_probs, loss_masks, **kw) -> (pg_loss, loss_masks, metrics).",
    )
    g.add_argument(
        "--custom-pg-loss-reducer-function-path",
        type=str,
        default=None,
        help="Reduces the per-token policy loss: fn(total_lengths, response_lengths, loss_masks, "
        "calculate_per_token_loss) -> reducer(packed per-token tensor) -> scalar (slime's sum of "
        "per-sample means; vime divides by the step's samples, or tokens with --calculate-per-token-loss).",
    )
    g.add_argument(
        "--rollout-sample-hook-path",
        action="append",
        default=[],
        help="Applied to each generated Sample before its reward (may be repeated, applied in order): "
        "hook(args, sample, *, rollout_id=None, evaluation=False) -> Sample | None, sync or async.",
    )
