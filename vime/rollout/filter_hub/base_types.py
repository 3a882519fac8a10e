"""What a dynamic-sampling filter returns, how the rollout reads it, and the drop counters."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class DynamicFilterOutput:
    """A filter's verdict on one group.

    ``keep_when_insufficient`` keeps a rejected group when dropping it would leave fewer
    candidates than the batch needs, so one bad group does not trigger another sampling round.
    """

    keep: bool
    reason: str | None = None
    keep_when_insufficient: bool = False


def call_dynamic_filter(fn: Callable[..., Any] | None, *args: Any, **kwargs: Any) -> DynamicFilterOutput:
    """Run a filter (None keeps everything); a bare bool from an older filter is wrapped."""
    if fn is None:
        return DynamicFilterOutput(keep=True)
    output = fn(*args, **kwargs)
    if isinstance(output, DynamicFilterOutput):
        return output
    if isinstance(output, bool) or type(output).__name__ == "bool_":
        return DynamicFilterOutput(keep=bool(output))
    name = getattr(fn, "__qualname__", repr(fn))
    raise TypeError(
        f"dynamic-sampling filter {name} returned {type(output).__name__}: return DynamicFilterOutput(keep=...) or a bool"
    )


def should_drop_dynamic_filter_output(
    output: DynamicFilterOutput, *, remaining_batch_size: int, target_data_size: int
) -> bool:
    """Whether the rollout drops the group, given how many candidates are still in play."""
    if output.keep:
        return False
    return not (output.keep_when_insufficient and remaining_batch_size <= target_data_size)


class MetricGatherer:
    """Counts dropped groups per reason, reported as ``rollout/dynamic_filter/drop_<reason>``."""

    def __init__(self) -> None:
        self._drops: Counter[str] = Counter()

    def on_dynamic_filter_drop(self, reason: str | None) -> None:
        if reason:
            self._drops[reason] += 1

    def collect(self) -> dict[str, int]:
        return {f"rollout/dynamic_filter/drop_{reason}": count for reason, count in self._drops.items()}
