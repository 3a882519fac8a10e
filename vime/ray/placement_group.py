"""Where training and rollout run: GPU placement groups, or plain CPU processes with no GPUs.

The layout is computed from the arguments alone (:func:`placement_layout`, testable without
Ray); :func:`create_placement_groups` then reserves the GPUs. A zero count is honoured as
zero: no GPUs for rollout means no rollout bundles, never "all of them".
"""

from __future__ import annotations

import logging
from argparse import Namespace
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PlacementLayout:
    """GPU counts: bundles ``[0, total)``; training uses the first ``actor_gpus``, rollout starts at ``rollout_offset``."""

    actor_gpus: int
    rollout_gpus: int
    total_gpus: int
    rollout_offset: int


@dataclass
class PlacementSlice:
    """One role's share of a placement group (``pg`` is None when it needs no GPU)."""

    pg: object | None
    bundle_indices: list[int] = field(default_factory=list)
    num_gpus: int = 0


def placement_layout(args: Namespace, gpus_available: bool = True) -> PlacementLayout:
    """How many GPUs each side takes; without GPUs on the machine everything is 0 (CPU processes)."""
    if not gpus_available:
        return PlacementLayout(0, 0, 0, 0)
    actor = 0 if args.debug_rollout_only else args.actor_num_nodes * args.actor_num_gpus_per_node
    rollout = 0 if (args.debug_train_only or args.rollout_external_engine_addrs) else args.rollout_num_gpus
    if args.colocate:
        return PlacementLayout(actor, rollout, max(actor, rollout), 0)
    return PlacementLayout(actor, rollout, actor + rollout, actor)


def create_placement_groups(args: Namespace) -> dict[str, PlacementSlice]:
    """Reserve the GPUs of :func:`placement_layout` (one bundle per GPU, packed); nothing on the CPU."""
    import ray

    gpus = ray.cluster_resources().get("GPU", 0) > 0
    layout = placement_layout(args, gpus_available=gpus)
    if layout.total_gpus == 0:
        logger.info("no GPUs to reserve: training and rollout run as CPU processes")
        return {"actor": PlacementSlice(None), "rollout": PlacementSlice(None)}
    from ray.util.placement_group import placement_group

    pg = placement_group([{"GPU": 1, "CPU": 1} for _ in range(layout.total_gpus)], strategy="PACK")
    ray.get(pg.ready())
    indices = list(range(layout.total_gpus))
    actor = PlacementSlice(pg, indices[: layout.actor_gpus], layout.actor_gpus)
    rollout_indices = indices[layout.rollout_offset : layout.rollout_offset + layout.rollout_gpus]
    return {"actor": actor, "rollout": PlacementSlice(pg, rollout_indices, layout.rollout_gpus)}
