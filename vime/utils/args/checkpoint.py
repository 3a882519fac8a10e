"""Checkpoints: where to save, how often, where to resume from."""

from __future__ import annotations

import argparse


def add_checkpoint_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("checkpoint")
    g.add_argument(
        "--load", type=str, default=None, help="Resume from this checkpoint dir (its latest step)."
    )
    g.add_argument("--save", type=str, default=None, help="Checkpoint dir.")
    g.add_argument(
        "--save-interval", type=int, default=None, help="Save every N rollout steps (and at the end)."
    )
    g.add_argument("--no-save-optim", action="store_true", default=False)
    g.add_argument("--save-hf", type=str, default=None, help="Also write a Hugging Face model dir here.")
    g.add_argument("--keep-checkpoints", type=int, default=None, help="vime: keep only the newest N steps.")
