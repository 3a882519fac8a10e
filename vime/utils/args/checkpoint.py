"""Checkpoints: where to save, how often, where to resume from."""

from __future__ import annotations

import argparse


def add_checkpoint_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("checkpoint")
    g.add_argument(
        "--load",
        type=str,
        default=None,
        help="Resume from this checkpoint dir (the step its latest marker names) or from one step dir "
        "(.../iter_0000009).",
    )
    g.add_argument(
        "--resume",
        action="store_true",
        default=False,
        help="Continue the run whose checkpoints are in --save (the same as --load <save>).",
    )
    g.add_argument(
        "--save",
        type=str,
        default=None,
        help="Checkpoint dir; one that holds another run's steps is refused unless this run continues it.",
    )
    g.add_argument(
        "--save-interval",
        type=int,
        default=None,
        help="Save every N rollout steps (and at the end); a checkpoint is also saved on Ctrl-C/SIGTERM.",
    )
    g.add_argument(
        "--no-save-optim",
        action="store_true",
        default=False,
        help="Leave the optimizer state out of checkpoints (smaller; a resume restarts the optimizer).",
    )
    g.add_argument(
        "--save-hf",
        type=str,
        default=None,
        help="Also write every saved step as a Hugging Face model directory at this path; {rollout_id} "
        "is replaced by the step (slime's template). Written beside and moved in when complete; a "
        "directory there is replaced only if vime wrote it.",
    )
    g.add_argument(
        "--keep-checkpoints",
        type=int,
        default=None,
        help="vime: keep only the newest N steps this run saved (never another run's, never the latest).",
    )
    parser.set_defaults(load_step=None)  # filled by validation: the one step --load names
