"""Generate one sample, or one group, with the generate hook and score it with the reward hub."""

from __future__ import annotations

import asyncio
import inspect
import uuid
from argparse import Namespace
from typing import Any

from vime.rollout.generate import generate
from vime.rollout.generate_state import GenerateState
from vime.rollout.rm_hub import async_rm, batched_async_rm
from vime.rollout.rollout_config import RolloutConfig
from vime.rollout.sample_hooks import apply_rollout_sample_hooks
from vime.utils.misc import load_function
from vime.utils.types import Sample


def _generate_hook(cfg: RolloutConfig, sample: Sample):
    path = getattr(sample, "generate_function_path", None) or cfg.custom_generate_function_path
    return load_function(path) if path else generate


async def generate_and_rm(
    args: Namespace, sample: Sample, sampling_params: dict[str, Any], evaluation: bool = False
) -> Sample | list[Sample]:
    """Generate one sample (unless it is already finished) and score it unless rewards are per group."""
    cfg = RolloutConfig.from_args(args)
    if cfg.masks_offpolicy and sample.response_length > 0:  # tokens of an older policy: kept, not trained on
        sample.loss_mask = [0] * sample.response_length
    if sample.status in (Sample.Status.COMPLETED, Sample.Status.TRUNCATED):
        return sample

    state = GenerateState(args)
    async with state.semaphore:
        if state.aborted:
            sample.status = Sample.Status.ABORTED
            return sample
        hook = _generate_hook(cfg, sample)
        if "evaluation" in inspect.signature(hook).parameters:
            sample = await hook(args, sample, sampling_params, evaluation=evaluation)
        else:
            sample = await hook(args, sample, sampling_params)
    sample = await apply_rollout_sample_hooks(args, sample, evaluation=evaluation)

    if cfg.group_rm:
        return sample
    samples = sample if isinstance(sample, list) else [sample]
    if any(s.status == Sample.Status.ABORTED for s in samples):
        return sample
    unscored = [s for s in samples if s.reward is None]
    if len(unscored) == 1 and not isinstance(sample, list):
        sample.reward = await async_rm(args, sample)
    elif unscored:
        for s, reward in zip(unscored, await batched_async_rm(args, unscored), strict=True):
            s.reward = reward
    return sample


async def generate_and_rm_group(
    args: Namespace, group: list[Sample], sampling_params: dict[str, Any], evaluation: bool = False
) -> list[Sample]:
    """Generate a whole group concurrently; with ``--group-rm`` score it as one batch."""
    state = GenerateState(args)
    if state.aborted:
        return group
    for sample in group:
        if sample.session_id is None:
            sample.session_id = uuid.uuid4().hex
    group = list(
        await asyncio.gather(*(generate_and_rm(args, s, dict(sampling_params), evaluation) for s in group))
    )
    if RolloutConfig.from_args(args).group_rm and not state.aborted:
        flat = [s for item in group for s in (item if isinstance(item, list) else [item])]
        for s, reward in zip(flat, await batched_async_rm(args, flat), strict=True):
            s.reward = reward
    return group
