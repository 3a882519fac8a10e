"""Dynamic-sampling, buffer and rollout-sample filters, and how a rollout reads their verdicts."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vime.rollout.filter_hub import (
    DynamicFilterOutput,
    MetricGatherer,
    call_dynamic_filter,
    check_reward_nonzero_std,
    check_reward_nonzero_std_with_fallback,
    keep_all,
    pop_first,
    remove_aborted,
    remove_truncated,
    should_drop_dynamic_filter_output,
)
from vime.utils.types import Sample

ARGS = SimpleNamespace(reward_key=None)


def group(*rewards) -> list[Sample]:
    return [Sample(index=i, reward=r) for i, r in enumerate(rewards)]


def test_nonzero_std_keeps_mixed_groups_and_drops_uniform_ones() -> None:
    assert check_reward_nonzero_std(ARGS, group(1, 0, 1)).keep
    dropped = check_reward_nonzero_std(ARGS, group(1, 1, 1))
    assert not dropped.keep and dropped.reason == "zero_std_1"
    assert check_reward_nonzero_std(ARGS, group(0.0, 0.0)).reason == "zero_std_0.0"
    assert not check_reward_nonzero_std(ARGS, group(1.0)).keep  # one sample: no spread


def test_nonzero_std_reads_dict_rewards_through_reward_key() -> None:
    args = SimpleNamespace(reward_key="score")
    assert check_reward_nonzero_std(args, group({"score": 1.0}, {"score": -1.0})).keep
    assert not check_reward_nonzero_std(args, group({"score": 1.0}, {"score": 1.0})).keep


def test_nonzero_std_on_fanned_out_groups() -> None:
    nested = [group(1, 1), group(0)]  # a multi-turn rollout split one sample into several
    assert check_reward_nonzero_std(ARGS, nested).keep


def test_unscored_sample_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"sample 1 has no reward yet"):
        check_reward_nonzero_std(ARGS, group(1, None))


def test_fallback_keeps_a_zero_std_group_only_when_short_of_candidates() -> None:
    output = check_reward_nonzero_std_with_fallback(ARGS, group(1, 1))
    assert not output.keep and output.keep_when_insufficient
    assert should_drop_dynamic_filter_output(output, remaining_batch_size=5, target_data_size=4)
    assert not should_drop_dynamic_filter_output(output, remaining_batch_size=4, target_data_size=4)
    strict = check_reward_nonzero_std(ARGS, group(1, 1))
    assert should_drop_dynamic_filter_output(strict, remaining_batch_size=4, target_data_size=4)


def test_call_dynamic_filter_wraps_bools_and_rejects_other_results() -> None:
    assert call_dynamic_filter(None, ARGS, group(1)).keep
    assert call_dynamic_filter(lambda args, samples: False, ARGS, group(1)) == DynamicFilterOutput(keep=False)

    def returns_text(args, samples):
        return "keep"

    with pytest.raises(TypeError, match=r"returns_text returned str: return DynamicFilterOutput"):
        call_dynamic_filter(returns_text, ARGS, group(1))


def test_metric_gatherer_counts_drop_reasons() -> None:
    gatherer = MetricGatherer()
    for reason in ["zero_std_1", "zero_std_1", "zero_std_0", None]:
        gatherer.on_dynamic_filter_drop(reason)
    assert gatherer.collect() == {
        "rollout/dynamic_filter/drop_zero_std_1": 2,
        "rollout/dynamic_filter/drop_zero_std_0": 1,
    }


def test_pop_first_takes_oldest_and_empties_the_buffer() -> None:
    buffer = [group(i) for i in range(3)]
    assert [g[0].reward for g in pop_first(ARGS, None, buffer, 2)] == [0, 1]
    assert [g[0].reward for g in buffer] == [2]
    assert len(pop_first(ARGS, None, buffer, 10)) == 1 and buffer == []
    assert pop_first(ARGS, None, buffer, 1) == []


def test_rollout_sample_filters_mark_in_place() -> None:
    groups = [group(1, 0), group(1, 1)]
    groups[0][1].status = Sample.Status.TRUNCATED
    groups[1][0].status = Sample.Status.ABORTED
    keep_all(ARGS, groups)
    assert not any(s.remove_sample for g in groups for s in g)
    remove_truncated(ARGS, groups)
    assert [[s.remove_sample for s in g] for g in groups] == [[False, True], [False, False]]
    remove_aborted(ARGS, groups)
    assert [[s.remove_sample for s in g] for g in groups] == [[False, True], [True, False]]
