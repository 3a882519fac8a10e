"""slime's ``--custom-config-path``: a YAML file whose keys become attributes of ``args``.

Custom functions (rollout, reward, generate hooks) read their own settings from ``args``; slime
lets a launch keep them in one YAML file. Each key overrides the flag of the same name (logged),
or adds an attribute no flag has, exactly as slime does.
"""

from __future__ import annotations

import argparse
import logging

logger = logging.getLogger(__name__)


def add_custom_config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--custom-config-path",
        type=str,
        default=None,
        help="YAML of settings for custom functions: each key becomes (or overrides) args.<key>.",
    )


def apply_custom_config(args: argparse.Namespace) -> None:
    """Set ``args.<key>`` for every key of the YAML file (a bad file is a one-line ValueError)."""
    if not args.custom_config_path:
        return
    import yaml

    try:
        with open(args.custom_config_path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle) or {}
    except OSError as exc:
        raise ValueError(
            f"--custom-config-path {args.custom_config_path}: cannot read it ({exc.strerror})"
        ) from None
    except yaml.YAMLError as exc:
        raise ValueError(f"--custom-config-path {args.custom_config_path}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(
            f"--custom-config-path {args.custom_config_path}: the file must hold a mapping of settings"
        )
    for key, value in data.items():
        if hasattr(args, key):
            logger.info("--custom-config-path sets %s: %r (was %r)", key, value, getattr(args, key))
        setattr(args, key, value)
