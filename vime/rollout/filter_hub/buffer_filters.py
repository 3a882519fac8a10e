"""Buffer filters: which buffered groups a data source hands out next.

Signature: ``fn(args, rollout_id, buffer, num_samples) -> list[list[Sample]]``; the filter
removes what it returns from ``buffer`` (the buffer is the data source's own list).
"""

from __future__ import annotations

from typing import Any


def pop_first(
    args: Any, rollout_id: int | None, buffer: list[list[Any]], num_samples: int
) -> list[list[Any]]:
    """The oldest ``num_samples`` groups (first in, first out): partial rollouts resume in order."""
    count = max(0, min(len(buffer), num_samples))
    taken = buffer[:count]
    del buffer[:count]
    return taken
