"""Which samples go into which micro-batch, on which data-parallel rank (both backends).

Fixed micro-batches (``--micro-batch-size``) split each rank's contiguous shard of a step into
equal chunks, as vime always did. Dynamic batching (slime's ``--use-dynamic-batch-size
--max-tokens-per-gpu N``) packs first and distributes second, as slime's ``dp_schedule`` does:
a step's samples are packed into micro-batches of at most N token positions, their number is
made a multiple of the data-parallel size, and the micro-batches are dealt to the ranks, round
robin or, with ``--balance-data``, balancing their cost.

vime pads each micro-batch to its longest sample (no packed sequences), so the budget counts the
positions computed: ``samples x longest``, rounded up to ``--data-pad-size-multiplier``. That is
what bounds activation memory; packing longest-first keeps the padding small. A sample longer
than the budget gets a micro-batch of its own. Every rank runs the same number of micro-batches
per step (FSDP and DDP need it). The loss divides by the step's global denominator, so gradients
do not depend on how a step is cut (tests/test_micro_batches.py checks it).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class BatchingConfig:
    """The batching flags as one typed value (built once from ``args``)."""

    micro_batch_size: int = 1
    max_tokens_per_gpu: int | None = None  # dynamic batching's budget for training micro-batches
    log_probs_max_tokens_per_gpu: int | None = None  # ... and for the log-prob (forward-only) passes
    balance_data: bool = False
    pad_multiple: int = 1

    @classmethod
    def from_args(cls, args: Any) -> BatchingConfig:
        dynamic = bool(args.use_dynamic_batch_size)
        return cls(
            micro_batch_size=args.micro_batch_size,
            max_tokens_per_gpu=args.max_tokens_per_gpu if dynamic else None,
            log_probs_max_tokens_per_gpu=(
                (args.log_probs_max_tokens_per_gpu or args.max_tokens_per_gpu) if dynamic else None
            ),
            balance_data=bool(args.balance_data),
            # as slime: every sequence a multiple of the tensor-parallel size (sequence parallelism
            # splits it) times --data-pad-size-multiplier
            pad_multiple=args.data_pad_size_multiplier * (args.tensor_model_parallel_size or 1),
        )

    @property
    def dynamic(self) -> bool:
        return self.max_tokens_per_gpu is not None


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def padded_positions(lengths: Sequence[int], pad_multiple: int = 1) -> int:
    """Positions a right-padded micro-batch of these lengths computes."""
    return len(lengths) * _round_up(max(lengths), pad_multiple) if lengths else 0


def pack_by_budget(lengths: Sequence[int], budget: int, pad_multiple: int = 1) -> list[list[int]]:
    """First-fit decreasing: indices into ``lengths``, grouped so each group's padded size <= budget.

    Longest first, so a group's first sample is its longest and adding one costs that length.
    Within a group, indices are in ascending order (deterministic, and the order the batch has).
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    groups: list[list[int]] = []
    widths: list[int] = []
    for i in order:
        for g, width in enumerate(widths):
            if (len(groups[g]) + 1) * width <= budget:
                groups[g].append(i)
                break
        else:
            groups.append([i])
            widths.append(_round_up(lengths[i], pad_multiple))
    return [sorted(g) for g in groups]


def split_to_count(groups: list[list[int]], count: int, lengths: Sequence[int]) -> list[list[int]]:
    """Split the costliest multi-sample groups in two (by length) until there are ``count`` groups.

    Returns fewer when no group has two samples left to split (the caller pads the schedule).
    """
    groups = [list(g) for g in groups]
    while len(groups) < count:
        splittable = [g for g in groups if len(g) > 1]
        if not splittable:
            break
        worst = max(splittable, key=lambda g: padded_positions([lengths[i] for i in g]))
        groups.remove(worst)
        by_length = sorted(worst, key=lambda i: (-lengths[i], i))
        half = len(by_length) // 2
        groups += [sorted(by_length[:half]), sorted(by_length[half:])]
    return groups


def _cost(group: list[int], lengths: Sequence[int], pad_multiple: int) -> int:
    return padded_positions([lengths[i] for i in group], pad_multiple)


def deal(costs: Sequence[int], ranks: int, balance: bool) -> list[list[int]]:
    """Indices of ``costs`` dealt to ``ranks`` in equal numbers: round robin, or (``balance``)
    costliest first to the least-loaded rank that still has room (LPT with a count limit)."""
    per_rank = len(costs) // ranks
    if not balance:
        return [list(range(r, len(costs), ranks)) for r in range(ranks)]
    dealt: list[list[int]] = [[] for _ in range(ranks)]
    heap = [(0, r) for r in range(ranks)]
    for i in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        full = []
        load, r = heapq.heappop(heap)
        while len(dealt[r]) >= per_rank:
            full.append((load, r))
            load, r = heapq.heappop(heap)
        dealt[r].append(i)
        heapq.heappush(heap, (load + costs[i], r))
        for item in full:
            heapq.heappush(heap, item)
    return [sorted(d) for d in dealt]


def fixed_chunks(indices: Sequence[int], size: int) -> list[list[int]]:
    return [list(indices[i : i + size]) for i in range(0, len(indices), size)]


def contiguous_shard(num_samples: int, rank: int, world_size: int) -> list[int]:
    """Contiguous, equal shards (the global batch size is validated to be a multiple of the ranks)."""
    per_rank, extra = divmod(num_samples, world_size)
    start = rank * per_rank + min(rank, extra)
    return list(range(start, start + per_rank + (1 if rank < extra else 0)))


def _step_groups(
    step: list[int], lengths: Sequence[int], cfg: BatchingConfig, ranks: int
) -> list[list[list[int]]]:
    """One step's micro-batches for every rank (global indices)."""
    if not cfg.dynamic and not cfg.balance_data:
        return [
            fixed_chunks([step[i] for i in contiguous_shard(len(step), r, ranks)], cfg.micro_batch_size)
            for r in range(ranks)
        ]
    step_lengths = [lengths[i] for i in step]
    if cfg.dynamic:
        groups = pack_by_budget(step_lengths, cfg.max_tokens_per_gpu, cfg.pad_multiple)
        target = max(_round_up(len(groups), ranks), ranks)
        groups = split_to_count(groups, target, step_lengths)
        costs = [_cost(g, step_lengths, cfg.pad_multiple) for g in groups]
        if len(groups) % ranks:  # too few samples to split further: deal what there is
            dealt = [list(range(r, len(groups), ranks)) for r in range(ranks)]
        else:
            dealt = deal(costs, ranks, cfg.balance_data)
        return [[[step[i] for i in groups[g]] for g in dealt[r]] for r in range(ranks)]
    # fixed micro-batches, samples balanced by cost over the ranks (equal sample counts)
    costs = [_round_up(n, cfg.pad_multiple) for n in step_lengths]
    dealt = deal(costs, ranks, balance=True)
    return [fixed_chunks([step[i] for i in dealt[r]], cfg.micro_batch_size) for r in range(ranks)]


def plan_training(
    lengths: Sequence[int], global_batch_size: int, ranks: int, cfg: BatchingConfig
) -> list[list[list[list[int]]]]:
    """``plan[step][rank]`` = that rank's micro-batches (global sample indices) for each step.

    Steps are consecutive chunks of ``global_batch_size`` samples (a partial last chunk is a step).
    """
    plan = []
    for start in range(0, len(lengths), global_batch_size):
        step = list(range(start, min(start + global_batch_size, len(lengths))))
        plan.append(_step_groups(step, lengths, cfg, ranks))
    return plan


def plan_forward(lengths: Sequence[int], cfg: BatchingConfig, *, at_least: int = 0) -> list[list[int]]:
    """Micro-batches of a forward-only pass over ``lengths`` (one rank's samples), with at least
    ``at_least`` of them where the samples allow (ranks that must run the same count)."""
    if cfg.log_probs_max_tokens_per_gpu is None:
        groups = fixed_chunks(range(len(lengths)), cfg.micro_batch_size)
    else:
        groups = pack_by_budget(lengths, cfg.log_probs_max_tokens_per_gpu, cfg.pad_multiple)
    return split_to_count(groups, at_least, lengths) if at_least > len(groups) else groups


def forward_count(lengths: Sequence[int], plan: list[list[list[list[int]]]], cfg: BatchingConfig) -> int:
    """The most forward micro-batches any rank needs for its samples of ``plan`` (every rank
    computes the same number, so FSDP's collectives line up)."""
    ranks = len(plan[0]) if plan else 1
    counts = []
    for r in range(ranks):
        mine = [i for step in plan for group in step[r] for i in group]
        counts.append(len(plan_forward([lengths[i] for i in mine], cfg)))
    return max(counts, default=0)


@dataclass(frozen=True)
class RankShare:
    """One data-parallel rank's part of a rollout, decided from every sample's length.

    ``order``: the global indices of its samples, in the order it trains them; ``steps``: its
    micro-batches of each optimizer step, as positions in ``order``; ``forward_at_least``: the
    forward micro-batches it runs at least, so every rank runs the same count (0 with one rank).
    """

    order: list[int]
    steps: list[list[list[int]]]
    forward_at_least: int


def rank_shares(
    lengths: Sequence[int], global_batch_size: int, ranks: int, cfg: BatchingConfig
) -> list[RankShare]:
    """Every rank's share of a rollout (the rollout manager splits the data with it, so each rank
    receives only its own samples; a backend given the whole batch picks its own share the same way)."""
    plan = plan_training(lengths, global_batch_size, ranks, cfg)
    at_least = forward_count(lengths, plan, cfg) if ranks > 1 else 0
    shares = []
    for rank in range(ranks):
        mine = [step[rank] for step in plan]
        order = [i for step in mine for group in step for i in group]
        position = {index: p for p, index in enumerate(order)}
        steps = [[[position[i] for i in group] for group in step] for step in mine]
        shares.append(RankShare(order, steps, at_least))
    return shares
