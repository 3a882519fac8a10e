"""TensorBoard logging as slime's ``--use-tensorboard`` does it: one scalar per metric per step.

The directory follows slime: ``$TENSORBOARD_DIR``, else ``tensorboard_log/<project>/<experiment>``
when ``--tb-project-name`` is given (the experiment defaults to the start time). slime refuses a
run with neither; vime writes to ``<run-dir>/tensorboard`` then, beside metrics.jsonl.
"""

from __future__ import annotations

import datetime
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class TensorboardConfig:
    enabled: bool = False
    project: str | None = None
    experiment: str | None = None
    run_dir: str | None = None

    @classmethod
    def from_args(cls, args: Any) -> TensorboardConfig:
        return cls(args.use_tensorboard, args.tb_project_name, args.tb_experiment_name, args.run_dir)

    def directory(self) -> Path:
        if os.environ.get("TENSORBOARD_DIR"):
            return Path(os.environ["TENSORBOARD_DIR"])
        if self.project is not None:
            experiment = self.experiment or datetime.datetime.now().strftime("%Y%m%d_%H%M%S")
            return Path("tensorboard_log") / self.project / experiment
        return Path(self.run_dir or ".") / "tensorboard"


def tensorboard_problem(cfg: TensorboardConfig) -> str | None:
    """One line when ``--use-tensorboard`` cannot work here (the package is an extra)."""
    if cfg.enabled and importlib.util.find_spec("tensorboard") is None:
        return (
            "--use-tensorboard needs the tensorboard package: pip install 'vime[tensorboard]' "
            "(or drop it: metrics.jsonl holds every value)"
        )
    return None


class TensorboardLog:
    """A SummaryWriter in the driver; numbers only (TensorBoard's scalars)."""

    def __init__(self, cfg: TensorboardConfig) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.directory = cfg.directory()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.writer = SummaryWriter(str(self.directory))

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        for key, value in metrics.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                self.writer.add_scalar(key, value, step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()
