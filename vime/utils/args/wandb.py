"""Experiment tracking: W&B (offline without a key) and vime's JSONL metrics file."""

from __future__ import annotations

import argparse


def add_wandb_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("wandb")
    g.add_argument(
        "--use-wandb",
        action="store_true",
        default=False,
        help="Also log to Weights & Biases (offline without a key).",
    )
    g.add_argument(
        "--wandb-mode",
        choices=["online", "offline", "disabled"],
        default=None,
        help="Unset: online with a key (WANDB_API_KEY or --wandb-key), offline otherwise; WANDB_MODE wins.",
    )
    g.add_argument(
        "--wandb-dir", type=str, default=None, help="Directory of the W&B run (default: the run dir)."
    )
    g.add_argument(
        "--wandb-key",
        type=str,
        default=None,
        help="W&B API key (or set WANDB_API_KEY); with it the run is online.",
    )
    g.add_argument("--wandb-host", type=str, default=None, help="W&B server for self-hosted instances.")
    g.add_argument("--wandb-team", type=str, default=None, help="W&B entity (team or user).")
    g.add_argument("--wandb-group", type=str, default=None, help="W&B group of this run.")
    g.add_argument("--wandb-project", type=str, default="vime", help="W&B project.")
    g.add_argument(
        "--wandb-run-id", type=str, default=None, help="W&B run id; giving one resumes that run's charts."
    )
    g.add_argument(
        "--disable-wandb-random-suffix",
        action="store_false",
        dest="wandb_random_suffix",
        default=True,
        help="Name the W&B group exactly --wandb-group (and the run too); by default both get a random "
        "suffix, as in slime.",
    )
    g.add_argument(
        "--use-tensorboard",
        action="store_true",
        default=False,
        help="Also log every numeric metric to TensorBoard (needs the 'tensorboard' extra).",
    )
    g.add_argument(
        "--tb-project-name",
        type=str,
        default=None,
        help="TensorBoard: write to tensorboard_log/<project>/<experiment> ($TENSORBOARD_DIR wins; "
        "neither: <run-dir>/tensorboard).",
    )
    g.add_argument(
        "--tb-experiment-name", type=str, default=None, help="TensorBoard: experiment (default: start time)."
    )
    g.add_argument(
        "--run-dir",
        type=str,
        default=None,
        help="vime: this run's outputs (metrics.jsonl, summary.json, reward.png, logs/ of engines and router); "
        "unset: <save>/runs/<run id>, or vime_runs/<run id> without --save.",
    )
    g.add_argument(
        "--metrics-jsonl",
        type=str,
        default=None,
        help="vime: append one JSON line of metrics per step here (unset: <run-dir>/metrics.jsonl).",
    )
    parser.set_defaults(vllm_log_dir=None)  # engine and router logs; the run sets <run-dir>/logs
