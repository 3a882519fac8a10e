"""The reward flags as one typed view of ``args``, built where a sample or a batch is scored.

The reward functions keep slime's signatures (``async_rm(args, sample)``), so a custom RM or a
plugin may pass its own namespace; missing flags take vime's parser defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vime.utils.args.defaults import config_from_args


@dataclass(frozen=True)
class RewardConfig:
    rm_type: str | None = None
    custom_rm_path: str | None = None
    group_rm: bool = False
    rm_url: str | None = None
    rm_max_retries: int = 5
    rm_retry_backoff_s: float = 1.0
    rm_timeout_s: float = 120.0
    reward_key: str | None = None
    eval_reward_key: str | None = None

    @classmethod
    def from_args(cls, args: Any) -> RewardConfig:
        return config_from_args(cls, args)
