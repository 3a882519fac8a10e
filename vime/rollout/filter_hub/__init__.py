"""Filters a rollout applies to what it generated.

- dynamic sampling (``--dynamic-sampling-filter-path``): keep or drop a whole group
  (:mod:`.dynamic_sampling_filters`, result type :class:`.base_types.DynamicFilterOutput`);
- buffer (``--buffer-filter-path``): which buffered groups a data source hands out next
  (:mod:`.buffer_filters`);
- rollout sample (``--rollout-sample-filter-path``): mark single samples ``remove_sample``
  after the batch is complete (:mod:`.rollout_sample_filters`).
"""

from .base_types import (
    DynamicFilterOutput,
    MetricGatherer,
    call_dynamic_filter,
    should_drop_dynamic_filter_output,
)
from .buffer_filters import pop_first
from .dynamic_sampling_filters import check_reward_nonzero_std, check_reward_nonzero_std_with_fallback
from .rollout_sample_filters import keep_all, remove_aborted, remove_truncated

__all__ = [
    "DynamicFilterOutput",
    "MetricGatherer",
    "call_dynamic_filter",
    "check_reward_nonzero_std",
    "check_reward_nonzero_std_with_fallback",
    "keep_all",
    "pop_first",
    "remove_aborted",
    "remove_truncated",
    "should_drop_dynamic_filter_output",
]
