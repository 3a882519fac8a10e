"""vime's default rollout function on vLLM (``--rollout-function-path vime.rollout.vllm_rollout.generate_rollout``).

``generate_rollout(args, rollout_id, data_source, evaluation=False)`` fills a training batch of
``--rollout-batch-size`` groups of ``--n-samples-per-prompt`` samples: it keeps
``--over-sampling-batch-size`` groups in flight (at most ``--vllm-server-concurrency`` requests per
engine), scores each finished group with the reward hub, passes it through the dynamic-sampling
filter (``--dynamic-sampling-filter-path``) and stops once enough groups are kept. Requests still
running are then aborted; with ``--partial-rollout`` their partial samples go back to the data
source and are continued next step. With ``evaluation=True`` it runs the eval datasets instead.

A custom generate hook (``--custom-generate-function-path`` or ``Sample.generate_function_path``)
has the signature ``async def generate(args, sample, sampling_params) -> Sample | list[Sample]``
(an ``evaluation`` keyword is passed when the hook accepts one).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import uuid
from argparse import Namespace
from typing import Any

from vime.rollout.filter_hub.base_types import (
    MetricGatherer,
    call_dynamic_filter,
    should_drop_dynamic_filter_output,
)
from vime.rollout.generate import build_sampling_params, generate
from vime.rollout.partial import abort_in_flight
from vime.rollout.rm_hub import async_rm, batched_async_rm
from vime.utils.http_utils import run
from vime.utils.misc import load_function
from vime.utils.types import RolloutFnEvalOutput, RolloutFnTrainOutput, Sample

__all__ = [
    "GenerateState",
    "generate_and_rm",
    "generate_and_rm_group",
    "generate_rollout",
    "generate_rollout_async",
]

logger = logging.getLogger(__name__)


class GenerateState:
    """What one rollout run shares across its requests: tokenizer, concurrency limit, in-flight tasks.

    One instance per ``args`` object (``GenerateState(args)`` returns the same one again).
    """

    _instances: dict[int, GenerateState] = {}

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

        self.args = args
        self.tokenizer = AutoTokenizer.from_pretrained(args.hf_checkpoint)
        engines = max(1, int(getattr(args, "rollout_num_engines_total", None) or 1))
        self.semaphore = asyncio.Semaphore(int(getattr(args, "vllm_server_concurrency", 512)) * engines)
        self.sampling_params = build_sampling_params(args)
        self.reset()

    def reset(self) -> None:
        self.retries = 0
        self.remaining_batch_size = 0
        self.pendings: set[asyncio.Task] = set()
        self.aborted = False

    def note_retry(self) -> None:
        """A request was lost (engine down) and is being sent again."""
        self.retries += 1

    def submit_generate_tasks(self, groups: list[list[Sample]]) -> None:
        for group in groups:
            task = asyncio.ensure_future(generate_and_rm_group(self.args, group, dict(self.sampling_params)))
            self.pendings.add(task)
        self.remaining_batch_size += len(groups)


def _generate_hook(args: Namespace, sample: Sample):
    path = getattr(sample, "generate_function_path", None) or getattr(
        args, "custom_generate_function_path", None
    )
    return load_function(path) if path else generate


async def generate_and_rm(
    args: Namespace, sample: Sample, sampling_params: dict[str, Any], evaluation: bool = False
) -> Sample | list[Sample]:
    """Generate one sample (unless it is already finished) and score it unless rewards are per group."""
    masks_offpolicy = getattr(args, "partial_rollout", False) and getattr(
        args, "mask_offpolicy_in_partial_rollout", False
    )
    if masks_offpolicy and sample.response_length > 0:  # tokens of an older policy: kept, not trained on
        sample.loss_mask = [0] * sample.response_length
    if sample.status in (Sample.Status.COMPLETED, Sample.Status.TRUNCATED):
        return sample

    state = GenerateState(args)
    async with state.semaphore:
        if state.aborted:
            sample.status = Sample.Status.ABORTED
            return sample
        hook = _generate_hook(args, sample)
        if "evaluation" in inspect.signature(hook).parameters:
            sample = await hook(args, sample, sampling_params, evaluation=evaluation)
        else:
            sample = await hook(args, sample, sampling_params)

    if getattr(args, "group_rm", False):
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
    if getattr(args, "group_rm", False) and not state.aborted:
        flat = [s for item in group for s in (item if isinstance(item, list) else [item])]
        for s, reward in zip(flat, await batched_async_rm(args, flat), strict=True):
            s.reward = reward
    return group


def _first(group: list) -> Sample:
    return group[0][0] if isinstance(group[0], list) else group[0]


async def generate_rollout_async(
    args: Namespace, rollout_id: int, get_samples
) -> tuple[RolloutFnTrainOutput, list[list[Sample]]]:
    """Fill one batch; return it and the groups cut short by the final abort (for --partial-rollout)."""
    state = GenerateState(args)
    state.reset()
    target = int(args.rollout_batch_size)
    over_sampling = int(getattr(args, "over_sampling_batch_size", None) or target)
    dynamic_filter = (
        load_function(args.dynamic_sampling_filter_path)
        if getattr(args, "dynamic_sampling_filter_path", None)
        else None
    )
    gatherer = MetricGatherer()
    kept: list[list[Sample]] = []
    seen: list[list[Sample]] = []
    surplus: list[list[Sample]] = []  # finished in the same wait that filled the batch
    while len(kept) < target:
        while state.remaining_batch_size < target:
            state.submit_generate_tasks(get_samples(over_sampling))
        done, state.pendings = await asyncio.wait(state.pendings, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            group = task.result()
            if len(group) != int(getattr(args, "n_samples_per_prompt", len(group))):
                raise RuntimeError(f"a group came back with {len(group)} samples, not --n-samples-per-prompt")
            seen.append(group)
            verdict = call_dynamic_filter(dynamic_filter, args, group)
            if should_drop_dynamic_filter_output(
                verdict, remaining_batch_size=state.remaining_batch_size, target_data_size=target
            ):
                gatherer.on_dynamic_filter_drop(reason=verdict.reason)
                state.remaining_batch_size -= 1
                continue
            if len(kept) < target:
                kept.append(group)
            else:
                surplus.append(group)
    partial = await abort_in_flight(args, state, rollout_id)
    if getattr(args, "partial_rollout", False):
        # Groups that finished after the batch was full go back to the data source with the cut-short
        # ones: with --partial-rollout no generated sample is thrown away.
        partial = surplus + partial
    kept.sort(key=lambda group: _first(group).index)
    seen.sort(key=lambda group: _first(group).index)
    if getattr(args, "rollout_sample_filter_path", None):
        load_function(args.rollout_sample_filter_path)(args, kept)
    if getattr(args, "rollout_all_samples_process_path", None):
        load_function(args.rollout_all_samples_process_path)(args, seen, get_samples)
    metrics = gatherer.collect() | {
        "rollout/groups_generated": len(seen),
        "rollout/partial_groups": len(partial),
        "rollout/retried_requests": state.retries,
    }
    state.reset()
    return RolloutFnTrainOutput(samples=kept, metrics=metrics), partial


def generate_rollout(
    args: Namespace, rollout_id: int, data_source: Any, evaluation: bool = False
) -> RolloutFnTrainOutput | RolloutFnEvalOutput:
    """The rollout function: a training batch from ``data_source``, or eval results when ``evaluation``."""
    if evaluation:
        from vime.rollout.eval_rollout import eval_rollout

        return run(eval_rollout(args, rollout_id))
    output, partial = run(generate_rollout_async(args, rollout_id, data_source.get_samples))
    if partial:
        data_source.add_samples(partial)
    return output
