"""``--keep-old-actor``: the trainer keeps the weights it gave the engines, so that a sample's old
log-probs come from the policy that generated it, not from the trainer's newer weights.

slime keeps two extra copies on the training process ("rollout_actor", "old_actor") and shifts them at
every weight update; in ``train_async.py`` a step's data was generated one update before the weights
that train on it. vime keeps a CPU copy per pushed version (the newest :data:`KEPT_VERSIONS`) and
reads each sample's version from the engine's own tag (``rollout_weight_versions`` in the train data),
so the old policy is the sample's behaviour policy in both loops.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from contextlib import contextmanager

import torch
from torch import nn

from vime.backends.train_data import TrainBatch

logger = logging.getLogger(__name__)

KEPT_VERSIONS = 2  # the engines' current weights and the ones before (async data lags by one update)
VERSIONS_KEY = "rollout_weight_versions"


def _local(tensor: torch.Tensor) -> torch.Tensor:
    """A parameter's own storage: the local shard of an FSDP2 DTensor, else the tensor itself."""
    return tensor.to_local() if hasattr(tensor, "to_local") else tensor


class RolloutWeights:
    """CPU copies of this rank's weights as pushed to the engines, by version."""

    def __init__(self, model: nn.Module, keep: int = KEPT_VERSIONS) -> None:
        self.model = model
        self.keep = keep
        self.copies: OrderedDict[str, dict[str, torch.Tensor]] = OrderedDict()

    def _tensors(self) -> dict[str, torch.Tensor]:
        named = dict(self.model.named_parameters()) | dict(self.model.named_buffers())
        return {name: _local(t.data) for name, t in named.items()}

    def note(self, version: str) -> None:
        """The engines now serve the model's current weights as ``version``."""
        self.copies[str(version)] = {
            name: t.detach().to("cpu", copy=True) for name, t in self._tensors().items()
        }
        self.copies.move_to_end(str(version))
        while len(self.copies) > self.keep:
            self.copies.popitem(last=False)

    @contextmanager
    def loaded(self, version: str):
        """The model holds the weights of ``version`` inside the block, its own ones again after it."""
        tensors = self._tensors()
        current = {name: t.detach().to("cpu", copy=True) for name, t in tensors.items()}
        with torch.no_grad():
            for name, t in tensors.items():
                t.copy_(self.copies[version][name])
            try:
                yield
            finally:
                for name, t in tensors.items():
                    t.copy_(current[name])

    def old_logprobs(
        self,
        batch: TrainBatch,
        current: list[torch.Tensor],
        compute: Callable[[TrainBatch], list[torch.Tensor]],
        every_kept_version: bool,
    ) -> tuple[list[torch.Tensor], int]:
        """Each sample's log-probs under the weights that generated it; ``current`` where that version
        is not kept (or unknown). Returns them and how many samples fell back to ``current``.

        ``every_kept_version``: run a forward for every kept copy whether or not a local sample needs
        it, so that ranks whose forwards are collective (FSDP2) make the same calls.
        """
        versions = [
            None if v is None else str(v) for v in batch.extras.get(VERSIONS_KEY, [None] * len(batch))
        ]
        wanted = list(self.copies) if every_kept_version else [v for v in self.copies if v in versions]
        out = list(current)
        for version in wanted:
            with self.loaded(version):
                logprobs = compute(batch)
            for i, v in enumerate(versions):
                if v == version:
                    out[i] = logprobs[i]
        missed = sum(v not in self.copies for v in versions)
        if missed:
            logger.warning(
                "--keep-old-actor: %d of %d samples came from weights no longer kept (or untagged); "
                "their old log-probs use the current weights",
                missed,
                len(batch),
            )
        return out, missed
