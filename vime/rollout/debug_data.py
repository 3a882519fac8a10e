"""Save and load one step's rollout data (``--save-debug-rollout-data`` / ``--load-debug-rollout-data``),
and what a step trained on (``--save-debug-train-data``); ``--dump-details`` sets both templates.

The path is a template with ``{rollout_id}``, e.g. ``/tmp/rollout_{rollout_id}.pt``. What is saved
is the training-data dict that ``RolloutManager.generate`` returns (plain lists, no engine state),
so a saved run can be replayed into the trainer with no engine running.
"""

from __future__ import annotations

import logging
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vime.utils.args.defaults import config_from_args

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
TRAIN_FORMAT_VERSION = 1


@dataclass(frozen=True)
class DebugDataConfig:
    """The debug-data flags, read once (validation has filled ``--dump-details``' templates)."""

    save_debug_rollout_data: str | None = None
    load_debug_rollout_data: str | None = None
    load_debug_rollout_data_subsample: float | None = None
    save_debug_train_data: str | None = None
    dump_details: str | None = None
    check_weight_update_equal: bool = False

    @classmethod
    def from_args(cls, args: Any) -> DebugDataConfig:
        return config_from_args(cls, args)


def rollout_data_path(template: str, rollout_id: int) -> Path:
    if "{rollout_id}" not in template:
        raise ValueError(
            f"debug rollout data path {template!r} has no '{{rollout_id}}': add it, e.g. /tmp/rollout_{{rollout_id}}.pt"
        )
    return Path(template.format(rollout_id=rollout_id))


def save_rollout_data(template: str, rollout_id: int, data: Any) -> Path:
    """Write ``data`` for ``rollout_id`` (atomically: a crash leaves no half-written file)."""
    path = rollout_data_path(template, rollout_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"format_version": FORMAT_VERSION, "rollout_id": rollout_id, "data": data}
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
    temporary.replace(path)
    return path


def load_rollout_data(template: str, rollout_id: int, subsample: float | None = None) -> Any:
    """Read back what ``save_rollout_data`` wrote for ``rollout_id``; ``subsample`` keeps that fraction."""
    path = rollout_data_path(template, rollout_id)
    if not path.is_file():
        raise FileNotFoundError(
            f"no saved rollout data for rollout {rollout_id} at {path}: run with --save-debug-rollout-data first"
        )
    payload = pickle.loads(path.read_bytes())
    if payload.get("format_version") != FORMAT_VERSION or payload.get("rollout_id") != rollout_id:
        raise ValueError(f"{path} is not vime rollout data for rollout {rollout_id}")
    data = payload["data"]
    return subsample_rollout_data(data, subsample) if subsample is not None else data


def subsample_rollout_data(data: dict[str, list], ratio: float) -> dict[str, list]:
    """slime's ``--load-debug-rollout-data-subsample``: ``int(n * ratio)`` samples, half from the start
    and half from the end of the step's samples.

    Every per-sample list is cut the same way; ``rollout_mask_sums`` (a rollout's token count repeated
    on each of its samples) is counted again over the samples kept.
    """
    n = len(data["tokens"])
    kept = int(n * ratio)
    head = kept // 2
    keep = list(range(head)) + list(range(n - (kept - head), n))
    if not keep:
        raise ValueError(
            f"--load-debug-rollout-data-subsample {ratio} keeps none of the {n} samples: raise it to at least {1 / n:.3g}"
        )
    out = {k: [v[i] for i in keep] if isinstance(v, list) and len(v) == n else v for k, v in data.items()}
    if "rollout_mask_sums" in out and "rollout_ids" in out:
        totals: dict[Any, int] = {}
        for rid, mask in zip(out["rollout_ids"], out["loss_masks"], strict=True):
            totals[rid] = totals.get(rid, 0) + sum(mask)
        out["rollout_mask_sums"] = [totals[rid] for rid in out["rollout_ids"]]
    logger.info("subsampled the loaded rollout data with ratio %s: %d -> %d samples", ratio, n, len(keep))
    return out


def save_train_data(template: str, rollout_id: int, shards: list[list[dict[str, Any]]]) -> Path:
    """One file for all data-parallel ranks (``torch.save``): ``samples`` in rollout order, each a dict of
    what the trainer used (tokens, response length, reward, loss mask, log-probs, advantages, ...),
    and ``dp_shards`` with the sample indices each rank trained on."""
    import torch

    path = rollout_data_path(template, rollout_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    samples = [dict(sample, data_parallel_rank=rank) for rank, shard in enumerate(shards) for sample in shard]
    if all(s.get("sample_index") is not None for s in samples):
        samples.sort(key=lambda s: s["sample_index"])
    payload = {
        "format_version": TRAIN_FORMAT_VERSION,
        "rollout_id": rollout_id,
        "samples": samples,
        "dp_shards": [
            {"data_parallel_rank": rank, "sample_indices": [s.get("sample_index") for s in shard]}
            for rank, shard in enumerate(shards)
        ],
    }
    temporary = path.with_name(path.name + ".tmp")
    torch.save(payload, temporary)
    temporary.replace(path)
    return path


def save_tokenizer(hf_checkpoint: str, dump_dir: str) -> Path:
    """``--dump-details``: the tokenizer beside the dumps, so token ids can be read back on their own."""
    from transformers import AutoTokenizer

    dest = Path(dump_dir) / "tokenizer"
    AutoTokenizer.from_pretrained(hf_checkpoint).save_pretrained(str(dest))
    return dest
