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
import logging
from argparse import Namespace
from typing import Any

from vime.rollout.eval_rollout import eval_rollout
from vime.rollout.filter_hub.base_types import (
    MetricGatherer,
    call_dynamic_filter,
    should_drop_dynamic_filter_output,
)
from vime.rollout.generate_and_rm import generate_and_rm, generate_and_rm_group
from vime.rollout.generate_state import GenerateState
from vime.rollout.partial import abort_in_flight
from vime.rollout.rollout_config import RolloutConfig
from vime.rollout.sampling_params import build_sampling_params
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


def _first(group: list) -> Sample:
    return group[0][0] if isinstance(group[0], list) else group[0]


async def generate_rollout_async(
    args: Namespace, rollout_id: int, get_samples
) -> tuple[RolloutFnTrainOutput, list[list[Sample]]]:
    """Fill one batch; return it and the groups cut short by the final abort (for --partial-rollout)."""
    state = GenerateState(args)
    state.reset()
    cfg = RolloutConfig.from_args(args)
    target = int(cfg.rollout_batch_size)
    over_sampling = int(cfg.over_sampling_batch_size or target)
    dynamic_filter = (
        load_function(cfg.dynamic_sampling_filter_path) if cfg.dynamic_sampling_filter_path else None
    )
    sampling_params = build_sampling_params(args)
    gatherer = MetricGatherer()
    kept: list[list[Sample]] = []
    seen: list[list[Sample]] = []
    surplus: list[list[Sample]] = []  # finished in the same wait that filled the batch
    while len(kept) < target:
        while state.remaining_batch_size < target:
            groups = get_samples(over_sampling)
            for group in groups:
                state.pendings.add(
                    asyncio.ensure_future(generate_and_rm_group(args, group, dict(sampling_params)))
                )
            state.remaining_batch_size += len(groups)
        done, state.pendings = await asyncio.wait(state.pendings, return_when=asyncio.FIRST_COMPLETED)
        # Groups that finished in the same wait are taken in prompt order, not in the set's
        # arbitrary order: which of them fills the batch must not depend on hashing.
        for group in sorted((task.result() for task in done), key=lambda group: _first(group).index):
            if len(group) != int(cfg.n_samples_per_prompt):
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
    if cfg.partial_rollout:
        # Groups that finished after the batch was full go back to the data source with the cut-short
        # ones: with --partial-rollout no generated sample is thrown away.
        partial = surplus + partial
    kept.sort(key=lambda group: _first(group).index)
    seen.sort(key=lambda group: _first(group).index)
    if cfg.rollout_sample_filter_path:
        load_function(cfg.rollout_sample_filter_path)(args, kept)
    if cfg.rollout_all_samples_process_path:
        load_function(cfg.rollout_all_samples_process_path)(args, seen, get_samples)
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
        return run(eval_rollout(args, rollout_id))
    output, partial = run(generate_rollout_async(args, rollout_id, data_source.get_samples))
    if partial:
        data_source.add_samples(partial)
    return output
