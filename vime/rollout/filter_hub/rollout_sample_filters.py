"""Rollout-sample filters: mark single samples ``remove_sample`` once the batch is complete.

Signature: ``fn(args, groups) -> None``, editing samples in place. A removed sample still
counts for group advantage normalization but contributes nothing to the loss.
"""

from __future__ import annotations

from typing import Any


def _each_sample(groups: list[list[Any]]):
    for group in groups:
        for item in group:
            yield from item if isinstance(item, list) else [item]


def keep_all(args: Any, groups: list[list[Any]]) -> None:
    """The default: every sample trains."""


def remove_truncated(args: Any, groups: list[list[Any]]) -> None:
    """Exclude responses cut off at the length limit (their reward judges an unfinished answer)."""
    for sample in _each_sample(groups):
        if sample.status.value == "truncated":
            sample.remove_sample = True


def remove_aborted(args: Any, groups: list[list[Any]]) -> None:
    """Exclude aborted samples that reached the batch (e.g. recovered after an engine restart)."""
    for sample in _each_sample(groups):
        if sample.status.value == "aborted":
            sample.remove_sample = True
