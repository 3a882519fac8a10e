"""Megatron distributed checkpoints (torch_dist format) of model + optimizer + step, and resume.

Layout (Megatron's): ``<dir>/iter_0000042/`` plus ``<dir>/latest_checkpointed_iteration.txt``. A save
goes to ``iter_X.tmp`` first and is renamed only when complete, so a crash mid-save never leaves a
half checkpoint where resume would look, and an existing checkpoint is never overwritten.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch
import torch.distributed as dist

from vime.utils.checkpoint_dir import write_marker

TRACKER = "latest_checkpointed_iteration.txt"


def iter_dir(root: str | Path, step: int) -> Path:
    return Path(root) / f"iter_{step:07d}"


def latest_step(root: str | Path) -> int | None:
    tracker = Path(root) / TRACKER
    if not tracker.exists():
        return None
    text = tracker.read_text().strip()
    if not text.isdigit():
        raise ValueError(f"{tracker} holds {text!r}, not a step number; fix or remove the file")
    return int(text)


# Megatron-LM's default layout for the distributed optimizer's state: one shard per DP rank's
# contiguous buffer, saved and loaded in parallel (0.16.1 rejects its older "model space" layout).
_METADATA = {"distrib_optim_sharding_type": "dp_reshardable", "singleton_local_shards": False}


def _sharded_state(model, optimizer, is_loading: bool) -> dict:
    model_sd = model.sharded_state_dict(metadata=dict(_METADATA))
    state = {"model": model_sd}
    if optimizer is not None and hasattr(optimizer, "sharded_state_dict"):
        state["optimizer"] = optimizer.sharded_state_dict(
            model_sd, is_loading=is_loading, metadata=dict(_METADATA)
        )
    return state


def save_checkpoint(model, optimizer, step: int, root: str | Path) -> Path:
    """Collective: every rank writes its shards. Returns the final ``iter_`` directory."""
    from megatron.core import dist_checkpointing

    final = iter_dir(root, step)
    if final.exists():
        raise FileExistsError(
            f"{final} already exists; save to another --save directory or remove it yourself"
        )
    tmp = final.with_name(final.name + ".tmp")
    rank0 = not dist.is_initialized() or dist.get_rank() == 0
    if rank0:
        if tmp.exists():  # the partial leftovers of a crashed save of this same step
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
    _barrier()
    dist_checkpointing.save(_sharded_state(model, optimizer, is_loading=False), str(tmp))
    _barrier()
    if rank0:
        tmp.rename(final)
        (final / "vime_step.txt").write_text(f"{step}\n")
        write_marker(root, step)  # temporary name, then rename
    _barrier()
    return final


def load_checkpoint(model, optimizer, root: str | Path, step: int | None = None) -> int:
    """Load the latest (or the given) step into model and optimizer; returns the step to continue from."""
    from megatron.core import dist_checkpointing

    step = latest_step(root) if step is None else step
    if step is None:
        raise FileNotFoundError(
            f"no {TRACKER} in {root}; nothing to resume (pass a directory written by --save)"
        )
    path = iter_dir(root, step)
    if not path.is_dir():
        raise FileNotFoundError(f"{path} is missing although {TRACKER} names step {step}")
    if optimizer is not None and hasattr(optimizer, "sharded_state_dict"):
        _materialize_adam_state(optimizer)
    state = dist_checkpointing.load(_sharded_state(model, optimizer, is_loading=True), str(path))
    with torch.no_grad():  # fp32 main params can be views of the (grad-requiring) model params
        model.load_state_dict(state["model"])
        if "optimizer" in state:
            optimizer.load_state_dict(state["optimizer"])
            _unshare_adam_steps(optimizer)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return step


def _materialize_adam_state(optimizer) -> None:
    """Create the (zero) Adam state a fresh torch Adam only creates at its first step.

    Without Apex / TransformerEngine, megatron-core 0.16.1 reads the optimizer's step while building
    the state dict to load into, and asserts when there is none yet (a resume into a new process, seen
    on the H200s). The loaded checkpoint then overwrites all of it.
    """
    for opt in getattr(optimizer, "chained_optimizers", [optimizer]):
        inner = getattr(opt, "optimizer", None)
        if not isinstance(inner, torch.optim.Optimizer):
            continue
        for group in inner.param_groups:
            for p in group["params"]:
                state = inner.state[p]
                if state:
                    continue
                state["step"] = torch.tensor(0.0)
                state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                if group.get("amsgrad"):
                    state["max_exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)


def _unshare_adam_steps(optimizer) -> None:
    """Give every parameter its own Adam step counter again, at the checkpoint's step.

    Without Apex / TransformerEngine, megatron-core 0.16.1's DistributedOptimizer.load_state_dict
    (a) puts ONE step tensor into every parameter's state, which torch's foreach Adam then increments
    once per parameter, and (b) copies into it the live step captured when the load's sharded state
    dict was built (the step before the load). Both make the first resumed step use a wrong bias
    correction (seen on the H200s: the replayed step differed from the original). The checkpoint's
    own step travels in the param groups; every parameter gets a fresh tensor holding it.
    """
    for opt in getattr(optimizer, "chained_optimizers", [optimizer]):
        inner = getattr(opt, "optimizer", None)
        for group in getattr(inner, "param_groups", []):
            saved = group.get("step")
            for p in group["params"]:
                state = inner.state.get(p, {})
                old = state.get("step")
                if not torch.is_tensor(old):
                    continue
                value = float(saved) if saved is not None else float(old)
                state["step"] = torch.tensor(value, dtype=old.dtype, device=old.device)


def _barrier() -> None:
    if dist.is_initialized():
        dist.barrier()
