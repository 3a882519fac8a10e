"""Fault tolerance of the rollout engines."""

from __future__ import annotations

import argparse


def add_fault_tolerance_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("fault tolerance")
    g.add_argument(
        "--use-fault-tolerance",
        action="store_true",
        default=False,
        help="Restart an engine that dies at any point of a step (generation, pause, weight push, resume, "
        "eval), re-sync its weights and re-run its requests; without it a dead engine fails the run in seconds.",
    )
    g.add_argument(
        "--rollout-health-check-interval",
        type=float,
        default=5.0,
        help="Seconds between engine health checks (also without --use-fault-tolerance, during generation).",
    )
    g.add_argument(
        "--rollout-health-check-timeout", type=float, default=10.0, help="Seconds a health check may take."
    )
    g.add_argument(
        "--rollout-health-check-first-wait",
        type=float,
        default=0.0,
        help="Seconds before the first health check (--use-fault-tolerance).",
    )
