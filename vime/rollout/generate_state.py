"""What one rollout run shares across its requests (slime's ``GenerateState``).

It sits below the generate hook, the per-sample step and the rollout loop, which all read it, so
that none of them imports another one back.
"""

from __future__ import annotations

import asyncio
from argparse import Namespace
from typing import ClassVar

from vime.rollout.rollout_config import RolloutConfig


class GenerateState:
    """What one rollout run shares across its requests: tokenizer, context limits, concurrency limit,
    in-flight tasks.

    One instance per ``args`` object (``GenerateState(args)`` returns the same one again).
    """

    _instances: ClassVar[dict[int, GenerateState]] = {}

    def __new__(cls, args: Namespace) -> GenerateState:
        instance = cls._instances.get(id(args))
        if instance is None or instance.args is not args:
            instance = super().__new__(cls)
            instance._setup(args)
            cls._instances[id(args)] = instance
        return instance

    def __init__(self, args: Namespace) -> None:  # all set up in _setup, once
        pass

    def _setup(self, args: Namespace) -> None:
        from transformers import AutoTokenizer

        from vime.rollout.sampling_params import ContextLimits

        self.args = args
        self.tokenizer = AutoTokenizer.from_pretrained(args.hf_checkpoint)
        self.context_limits = ContextLimits.from_args(args)
        self.semaphore = asyncio.Semaphore(RolloutConfig.from_args(args).request_slots)
        self.reset()

    @property
    def sampling_params(self) -> dict:
        """A fresh copy of the rollout's sampling params from the flags (slime's ``state.sampling_params``)."""
        from vime.rollout.sampling_params import build_sampling_params

        return build_sampling_params(self.args)

    def reset(self) -> None:
        self.retries = 0
        self.remaining_batch_size = 0
        self.pendings: set[asyncio.Task] = set()
        self.aborted = False

    def note_retry(self) -> None:
        """A request was lost (engine down) and is being sent again."""
        self.retries += 1
