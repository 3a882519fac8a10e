"""vime's default conversion of generated samples into the batch the trainer consumes.

Hook contracts:

- ``--custom-convert-samples-to-train-data-path``:
  ``def convert(args, samples: list[Sample]) -> dict[str, list]``: a dict with at least the
  ``REQUIRED_KEYS`` below, every list one entry per sample, in sample order.
- ``--rollout-data-postprocess-path``:
  ``def postprocess(args, rollout_id: int, rollout_data: dict[str, list]) -> None``: called
  after the trainer has added its log probabilities; edits ``rollout_data`` in place (e.g. the
  loss masks) and must keep every per-sample list the same length.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vime.rollout.rollout_config import RolloutConfig
from vime.utils.misc import load_function
from vime.utils.types import Sample

REQUIRED_KEYS = (
    "tokens",
    "response_lengths",
    "rewards",
    "raw_reward",
    "truncated",
    "loss_masks",
    "sample_indices",
)


def reward_post_process_for(args: Any):
    """The reward post-process in force: ``--custom-reward-post-process-path`` or vime's default."""
    path = RolloutConfig.from_args(args).custom_reward_post_process_path
    if path:
        return load_function(path)
    from vime.rollout.reward_post_process import post_process_rewards

    return post_process_rewards


def convert_samples_to_train_data(args: Any, samples: Sequence[Sample]) -> dict[str, list]:
    """One list per field, one entry per sample: what every training backend reads."""
    samples = list(samples)
    raw_rewards, rewards = reward_post_process_for(args)(args, samples)
    if len(raw_rewards) != len(samples) or len(rewards) != len(samples):
        raise ValueError(
            f"reward post-process returned {len(raw_rewards)} raw rewards and {len(rewards)} rewards "
            f"for {len(samples)} samples; it must return one of each per sample"
        )
    loss_masks = [_loss_mask(sample) for sample in samples]
    rollout_ids = _rollout_ids(samples)
    data: dict[str, list] = {
        "tokens": [sample.tokens for sample in samples],
        "response_lengths": [sample.response_length for sample in samples],
        "rewards": list(rewards),
        "raw_reward": list(raw_rewards),
        "truncated": [int(sample.status == Sample.Status.TRUNCATED) for sample in samples],
        "sample_indices": [sample.index for sample in samples],
        "rollout_ids": rollout_ids,
        "loss_masks": loss_masks,
        # the engine's tag of the weights that generated each sample (its latest, for a continued one)
        "rollout_weight_versions": [
            sample.weight_versions[-1] if sample.weight_versions else None for sample in samples
        ],
    }
    # the whole rollout's token count, repeated per sample, so a loss reduced per micro-batch
    # still divides by the rollout's total however its samples were split across micro-batches
    totals: dict[int, int] = {}
    for rid, mask in zip(rollout_ids, loss_masks, strict=True):
        totals[rid] = totals.get(rid, 0) + sum(mask)
    data["rollout_mask_sums"] = [totals[rid] for rid in rollout_ids]
    if any("raw_reward" in (sample.metadata or {}) for sample in samples):
        data["raw_reward"] = [
            (sample.metadata or {}).get("raw_reward", raw)
            for sample, raw in zip(samples, raw_rewards, strict=True)
        ]
    if samples and "round_number" in (samples[0].metadata or {}):
        data["round_number"] = [sample.metadata["round_number"] for sample in samples]
    for field_name in ("rollout_log_probs", "teacher_log_probs", "multimodal_train_inputs"):
        if samples and getattr(samples[0], field_name) is not None:
            data[field_name] = [getattr(sample, field_name) for sample in samples]
    return data


def _loss_mask(sample: Sample) -> list[int]:
    """All ones when unset; all zeros for a sample a filter removed from the loss."""
    mask = sample.loss_mask if sample.loss_mask is not None else [1] * sample.response_length
    if len(mask) != sample.response_length:
        raise ValueError(
            f"sample {sample.index}: loss_mask has {len(mask)} entries but response_length is {sample.response_length}"
        )
    return [0] * sample.response_length if sample.remove_sample else list(mask)


def _rollout_ids(samples: list[Sample]) -> list[int]:
    """Each sample's rollout id; samples without one get fresh ids that collide with none."""
    taken = {sample.rollout_id for sample in samples if sample.rollout_id is not None}
    ids, fresh = [], 0
    for sample in samples:
        if sample.rollout_id is not None:
            ids.append(sample.rollout_id)
            continue
        while fresh in taken:
            fresh += 1
        taken.add(fresh)
        ids.append(fresh)
    return ids


def check_rollout_data(args: Any, rollout_id: int, rollout_data: dict[str, Any]) -> None:
    """vime's default rollout-data post-process: change nothing, refuse a misaligned batch.

    A custom converter or an earlier step that leaves per-sample lists of different lengths
    would otherwise train on shifted rewards without any error.
    """
    missing = [key for key in REQUIRED_KEYS if key not in rollout_data]
    if missing:
        raise ValueError(f"rollout {rollout_id}: train data lacks {missing}")
    n = len(rollout_data["tokens"])
    for key in REQUIRED_KEYS:
        if len(rollout_data[key]) != n:
            raise ValueError(
                f"rollout {rollout_id}: train data {key!r} has {len(rollout_data[key])} entries, tokens has {n}"
            )
    for i, (mask, length) in enumerate(
        zip(rollout_data["loss_masks"], rollout_data["response_lengths"], strict=True)
    ):
        if len(mask) != length:
            raise ValueError(
                f"rollout {rollout_id}: sample {i} loss mask has {len(mask)} entries, response_length {length}"
            )
