"""W&B tracking that works without an account: offline runs when no key is set.

Mode, first match wins: ``WANDB_MODE`` in the environment, ``--wandb-mode``, ``online`` when a
key is known (``--wandb-key`` or ``WANDB_API_KEY``), else ``offline``. An offline run writes a
real run directory under ``--wandb-dir`` that ``wandb sync`` can upload later.
"""

from __future__ import annotations

import logging
import os
import secrets
import string
from argparse import Namespace
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)


def wandb_mode(args: Namespace) -> str:
    env = os.environ.get("WANDB_MODE")
    if env:
        return env
    if args.wandb_mode:
        return args.wandb_mode
    return "online" if (args.wandb_key or os.environ.get("WANDB_API_KEY")) else "offline"


def random_run_id() -> str:
    """Eight lowercase letters and digits, like W&B's own run ids (its generator is not public API)."""
    alphabet = string.ascii_lowercase + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(8))


def run_group_and_name(
    group: str | None, random_suffix: bool, new_id: Callable[[], str]
) -> tuple[str | None, str | None]:
    """slime's W&B group and run name: ``<group>_<random id>`` and ``<that>-RANK_0`` (the driver logs),
    or the group itself for both with ``--disable-wandb-random-suffix``; W&B's own without ``--wandb-group``."""
    if group is None:
        return None, None
    if not random_suffix:
        return group, group
    suffixed = f"{group}_{new_id()}"
    return suffixed, f"{suffixed}-RANK_0"


def init_wandb(args: Namespace, config: dict[str, Any] | None = None):
    """Start a run (or return None when ``--use-wandb`` is off); returns the ``wandb.Run``."""
    if not args.use_wandb:
        return None
    import wandb

    mode = wandb_mode(args)
    if mode == "online" and args.wandb_key:
        wandb.login(key=args.wandb_key, host=args.wandb_host)
    directory = args.wandb_dir or args.run_dir or args.save  # wandb adds its own "wandb/" under this
    if directory:
        os.makedirs(directory, exist_ok=True)
    group, name = run_group_and_name(args.wandb_group, args.wandb_random_suffix, random_run_id)
    run = wandb.init(
        project=args.wandb_project,
        entity=args.wandb_team,
        group=group,
        name=name,
        id=args.wandb_run_id,
        resume="allow" if args.wandb_run_id else None,
        dir=directory,
        mode=mode,
        config=config if config is not None else {k: v for k, v in vars(args).items() if _plain(v)},
        settings=wandb.Settings(silent=True, console="off"),
    )
    logger.info("W&B run %s in %s mode, directory %s", run.id, mode, run.dir)
    return run


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool | list | tuple | dict)
