"""The args of a trainer driven by hand (``--debug-train-only``): the flags the backend tests share."""

from __future__ import annotations

from pathlib import Path

from vime.utils.arguments import parse_args


def debug_train_args(
    model_dir: Path,
    *extra: str,
    batch: int = 2,
    n: int = 2,
    rollouts: int = 4,
    micro: int = 2,
    lr: str = "1e-2",
):
    """``parse_args`` of a debug-train-only run on ``model_dir``: ``batch`` prompts of ``n`` samples,
    ``rollouts`` steps, micro-batches of ``micro``, then ``extra`` (which may override any of them)."""
    return parse_args(
        [
            "--debug-train-only",
            "--hf-checkpoint", str(model_dir),
            "--rollout-batch-size", str(batch),
            "--n-samples-per-prompt", str(n),
            "--num-rollout", str(rollouts),
            "--micro-batch-size", str(micro),
            "--lr", lr,
            *extra,
        ]
    )  # fmt: skip
