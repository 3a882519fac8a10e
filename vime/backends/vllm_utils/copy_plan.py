"""Record the copies a model's ``load_weights`` makes from shared memory once, then replay them as one batch.

A weight update through CUDA IPC hands the engine views of the trainer's memory. vLLM's
``load_weights`` routes every tensor through its weight loader (name mapping, fused q/k/v and
gate/up shards, tensor-parallel narrowing): hundreds of Python calls per update, several times
the cost of the copy itself on a GPU. When the trainer sends the same layout again (same names,
shapes, offsets), the loaders would make exactly the same copies, so the first update runs
``load_weights`` under a recorder that notes every ``Tensor.copy_`` whose source lies in the shared
storages, and later updates replay those copies with one ``torch._foreach_copy_``.

A plan is only kept when replaying it is provably the same as loading: every write into the model
during the recorded load must be such a copy. A loader that transforms the data first (a dtype
conversion, a concatenation, a scale) copies from a tensor outside the shared storages; the plan is
then marked not replayable and every update goes through ``load_weights``. A loader that makes a
parameter point into the shared memory instead of copying would leave the engine reading the
trainer's buffer; that is refused outright.

Pure torch: no vLLM import, so the recorder is tested on the CPU with a model whose loaders do what
vLLM's do (tests/test_copy_plan.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch.overrides import TorchFunctionMode

# In-place writers that take data from another tensor without being ``copy_``: a load that uses
# one of these is not a set of copies, so it is not replayed.
_OTHER_WRITERS = {
    torch.Tensor.__setitem__,
    torch.Tensor.index_copy_,
    torch.Tensor.index_put_,
    torch.Tensor.masked_scatter_,
    torch.Tensor.scatter_,
    torch.Tensor.set_,
}


@dataclass(frozen=True)
class SourceSpec:
    """Where a copy reads from: storage ``storage`` at element offset ``offset`` with ``shape`` and ``stride``."""

    storage: int
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype

    def view(self, storages: Sequence[torch.UntypedStorage], device: torch.device) -> torch.Tensor:
        out = torch.empty(0, dtype=self.dtype, device=device)
        return out.set_(storages[self.storage], self.offset, self.shape, self.stride)


@dataclass
class CopyPlan:
    """The copies one layout's load makes: ``targets[i]`` receives ``sources[i]``."""

    targets: list[torch.Tensor] = field(default_factory=list)
    sources: list[SourceSpec] = field(default_factory=list)
    replayable: bool = True
    why_not: str = ""
    nbytes: int = 0
    _views_key: tuple | None = None
    _views: list[torch.Tensor] | None = None

    def replay(
        self, storages: Sequence[torch.UntypedStorage], device: torch.device, keep_views: bool = False
    ) -> int:
        """Copy the current contents of ``storages`` into the model; returns the bytes copied.

        With ``keep_views`` (the storages stay open between updates) the source views are built once
        and kept: building hundreds of views costs about as much as copying a 1.5B model on an H200.
        """
        key = tuple(s.data_ptr() for s in storages)
        if self._views_key == key and self._views is not None:
            sources = self._views
        else:
            sources = [spec.view(storages, device) for spec in self.sources]
            self._views_key, self._views = (key, sources) if keep_views else (None, None)
        copy_all(self.targets, sources)
        return self.nbytes

    def forget_views(self) -> None:
        """Drop the kept source views (they hold the trainer's storages open)."""
        self._views_key, self._views = None, None


def copy_all(targets: list[torch.Tensor], sources: list[torch.Tensor]) -> None:
    """``t.copy_(s)`` for every pair, as one multi-tensor kernel where the pairs allow it."""
    if not targets:
        return
    try:
        torch._foreach_copy_(targets, sources)
    except (RuntimeError, TypeError):  # mixed devices or dtypes the fused kernel refuses
        for t, s in zip(targets, sources, strict=True):
            t.copy_(s)


class _Recorder(TorchFunctionMode):
    def __init__(self, storage_index: dict[int, int], plan: CopyPlan):
        super().__init__()
        self.storage_index, self.plan = storage_index, plan

    def _refuse(self, why: str) -> None:
        if self.plan.replayable:
            self.plan.replayable, self.plan.why_not = False, why

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.copy_ and len(args) >= 2 and isinstance(args[1], torch.Tensor):
            target, source = args[0], args[1]
            k = self.storage_index.get(source.untyped_storage().data_ptr())
            if k is None:
                self._refuse(f"a loader copies into a {tuple(target.shape)} tensor from data it computed")
            else:
                self.plan.targets.append(target)
                self.plan.sources.append(
                    SourceSpec(k, source.storage_offset(), tuple(source.shape), source.stride(), source.dtype)
                )
                self.plan.nbytes += target.numel() * target.element_size()
        elif func in _OTHER_WRITERS:
            self._refuse(f"a loader writes with {getattr(func, '__name__', func)}")
        return func(*args, **kwargs)


def record_load(
    load: Callable[[], object],
    storages: Sequence[torch.UntypedStorage],
    parameters: Sequence[torch.Tensor],
) -> CopyPlan:
    """Run ``load()`` (which reads views of ``storages``) and return the copies it made.

    ``parameters`` are the model's tensors; none may end up sharing memory with ``storages``.
    """
    index = {s.data_ptr(): k for k, s in enumerate(storages)}
    plan = CopyPlan()
    with _Recorder(index, plan):
        load()
    for p in parameters:
        if p.untyped_storage().data_ptr() in index:
            raise RuntimeError(
                "the model's load_weights made a parameter point into the trainer's shared memory instead of "
                "copying it; this model cannot take IPC updates (use --weight-sync disk)"
            )
    return plan
