"""vime's own flags for the engines and the router (slime's ``--sglang-*`` names, on vLLM).

Not generated from vLLM's parser (that is ``backends/vllm_utils/arguments.py``, ``--vllm-*``
pass-through): added before it, so a vLLM option of the same name is never mirrored over them.
Engine counts and addresses are in ``cluster.py`` / ``rollout.py``, fault tolerance in
``fault_tolerance.py``.
"""

from __future__ import annotations

import argparse


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("vime rollout engines")
    group.add_argument(
        "--vllm-server-concurrency",
        type=int,
        default=512,
        help="Most generate requests in flight per engine.",
    )
    group.add_argument(
        "--vllm-router-ip",
        type=str,
        default=None,
        help="Use a running vllm-router instead of starting one.",
    )
    group.add_argument(
        "--vllm-router-port",
        type=int,
        default=None,
        help="Port of --vllm-router-ip, or of the router vime starts.",
    )
    group.add_argument(
        "--vllm-engine-start-timeout",
        type=float,
        default=600.0,
        help="Seconds an engine may take to become healthy before its start fails.",
    )
    group.add_argument(
        "--vllm-base-port",
        type=int,
        default=15000,
        help="Engine ports are free ports from here on, after a random offset below 5000 (parallel runs rarely collide).",
    )
    group.add_argument(
        "--rollout-request-retry-timeout",
        type=float,
        default=900.0,
        help="Seconds a generate request lost to a dead engine keeps being retried on healthy ones.",
    )
    group.add_argument(
        "--rollout-routing",
        choices=("direct", "router"),
        default="direct",
        help="How vime's generate requests reach the engines: direct (picked here from the router's "
        "worker list; no extra hop) or router (each request through vllm-router).",
    )
