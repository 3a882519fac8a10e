"""The fully-async mode's staleness bound, admission rule and stale-sample rule (vime.rollout.async_gate).

The property tests drive the gate the way the producer and the trainer do, in random orders, and
check each trained token against the version the simulated engine really gave it (kept apart from
the tags the gate reads), so a gate that trusted a wrong fallback or mislaid a span would fail.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vime.rollout.async_gate import ADMITTED_KEY, AsyncGate, IdleClock, StalenessRule, samples_of
from vime.rollout.generate import apply_generate_output
from vime.utils.types import Sample
from vime.utils.weight_versions import SPANS_KEY, oldest_trained_version, record_spans, token_versions

N = 2  # samples per group


class Engine:
    """Prompts to hand out, and the true version of every token it writes (id(sample) -> versions)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.truth: dict[int, list[int]] = {}
        self.next_index = 0

    def prompts(self) -> list[Sample]:
        group = []
        for _ in range(N):
            group.append(Sample(index=self.next_index, prompt="q", tokens=[1, 2, 3], label="a"))
            self.next_index += 1
        return group

    def complete(self, group: list[Sample], admitted: int, now: int, tag: bool = True) -> None:
        """Write a response whose versions never decrease, from the admission version up to ``now``."""
        for sample in group:
            length = self.rng.randint(1, 5)
            versions = sorted(self.rng.randint(admitted, now) for _ in range(length))
            sample.append_response_tokens([7] * length, [-0.5] * length)
            sample.status = Sample.Status.COMPLETED
            sample.reward = 1.0
            if tag and self.rng.random() < 0.8:  # some answers come untagged (an engine without tags)
                spans, start = [], 0
                for i in range(1, length + 1):
                    if i == length or versions[i] != versions[start]:
                        spans.append({"version": str(versions[start]), "start": start, "end": i})
                        start = i
                record_spans(sample, spans, 0)
            if self.rng.random() < 0.3:  # a tool's tokens: not trained on
                sample.loss_mask = [self.rng.choice((0, 1)) for _ in range(length)]
            self.truth[id(sample)] = versions


def trained_true_versions(engine: Engine, sample: Sample) -> list[int]:
    mask = sample.loss_mask if sample.loss_mask is not None else [1] * sample.response_length
    return [v for keep, v in zip(mask, engine.truth[id(sample)], strict=True) if keep]


operations = st.lists(
    st.tuples(st.sampled_from(["admit", "finish", "abort", "update", "take"]), st.integers(0, 10**6)),
    max_size=120,
)


@settings(max_examples=300, deadline=None)
@given(
    ops=operations,
    max_lag=st.integers(0, 4),
    batch=st.integers(1, 3),
    in_flight=st.integers(1, 8),
    takes_per_version=st.integers(1, 2),
    action=st.sampled_from(["regenerate", "drop"]),
    mask=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_no_trained_token_is_older_than_the_bound(
    ops, max_lag, batch, in_flight, takes_per_version, action, mask, seed
):
    """Whatever the order groups finish in and updates come, every token a take hands out was
    written at most ``max_lag`` versions before the take, and every admitted group is accounted for."""
    rng = random.Random(seed)
    engine = Engine(rng)
    rule = StalenessRule(max_lag=max_lag, action=action, mask_stale_tokens=mask)
    gate = AsyncGate(rule, batch, in_flight, takes_per_version=takes_per_version, version=1)
    admitted = taken = regenerated = 0
    tickets: dict[int, tuple] = {}
    for op, pick in ops:
        if op == "admit" and gate.may_admit():
            group = engine.prompts()
            ticket = gate.admit(group)
            tickets[ticket.number] = (ticket, group)
            admitted += 1
        elif op in ("finish", "abort") and gate.in_flight:
            number = sorted(gate.in_flight)[pick % len(gate.in_flight)]
            ticket, group = tickets.pop(number)
            if op == "finish":
                engine.complete(group, ticket.admitted_version, gate.version)
                gate.finish(ticket, group)
            else:
                returned = gate.aborted(ticket, group, keep_partial=False)
                assert all(s.response_length == 0 and s.status == Sample.Status.PENDING for s in returned)
        elif op == "update":
            gate.note_version(gate.version + 1)
        elif op == "take":
            result = gate.take(batch)
            taken += len(result.groups)
            regenerated += len(result.regenerate)
            for group in result.groups:
                for sample in samples_of(group):
                    for version in trained_true_versions(engine, sample):
                        assert gate.version - version <= max_lag, (gate.version, version, sample)
            assert all(lag <= max_lag for lag in result.lags)
            for group in result.regenerate:  # the documented rule: generated again from the prompts
                assert all(s.response_length == 0 and SPANS_KEY not in s.metadata for s in group)
        counts = gate.total
        assert admitted == (
            taken
            + counts.regenerated_groups
            + counts.dropped_groups
            + counts.aborted_groups
            + len(gate.in_flight)
            + len(gate.ready)
        )
    assert regenerated == gate.total.regenerated_groups
    if action == "drop":
        assert gate.total.regenerated_groups == 0


@settings(max_examples=200, deadline=None)
@given(
    max_lag=st.integers(0, 4),
    batch=st.integers(1, 4),
    in_flight=st.integers(1, 12),
    steps=st.integers(1, 25),
    seed=st.integers(0, 2**16),
)
def test_admission_keeps_in_order_groups_within_the_bound(max_lag, batch, in_flight, steps, seed):
    """AReaL's admission rule: when groups finish in the order they began and the trainer pushes one
    version per batch, no group ever falls beyond the bound (none is regenerated), and with a bound
    of K >= 1 the engines work ahead of the trainer (a batch can be ready while it trains)."""
    rng = random.Random(seed)
    engine = Engine(rng)
    gate = AsyncGate(StalenessRule(max_lag=max_lag), batch, in_flight, version=1)
    queue: list[tuple] = []
    most_ahead = 0
    for _ in range(steps):
        while gate.may_admit():
            group = engine.prompts()
            queue.append((gate.admit(group), group))
        most_ahead = max(most_ahead, len(gate.in_flight) + len(gate.ready))
        for _ in range(rng.randint(0, len(queue))):  # the engines finish a prefix, in order
            ticket, group = queue.pop(0)
            engine.complete(group, ticket.admitted_version, gate.version)
            gate.finish(ticket, group)
        if len(gate.ready) >= batch:
            result = gate.take(batch)
            assert len(result.groups) == batch and all(lag <= max_lag for lag in result.lags)
            gate.note_version(gate.version + 1)
    assert gate.total.regenerated_groups == 0 and gate.total.dropped_groups == 0
    assert most_ahead <= (max_lag + 1) * batch
    if min(in_flight, (max_lag + 1) * batch) > batch:
        assert most_ahead > batch  # generation ran ahead of the batch the trainer takes


def _stale_group(gate: AsyncGate, versions: list[list[int]], masks=None) -> tuple:
    """A finished group whose samples' tokens carry ``versions`` (one list per sample)."""
    group = [Sample(index=i, prompt=f"q{i}", tokens=[1, 2], label="a") for i in range(len(versions))]
    ticket = gate.admit(group)
    for i, (sample, tags) in enumerate(zip(group, versions, strict=True)):
        sample.append_response_tokens([5] * len(tags), [-1.0] * len(tags))
        sample.status, sample.reward = Sample.Status.COMPLETED, 0.5
        record_spans(sample, [{"version": str(v), "start": j, "end": j + 1} for j, v in enumerate(tags)], 0)
        if masks is not None:
            sample.loss_mask = list(masks[i])
    gate.finish(ticket, group)
    return ticket, group


def test_a_stale_group_is_regenerated_from_its_prompts():
    gate = AsyncGate(StalenessRule(max_lag=1), batch_groups=1, max_in_flight=4, version=3)
    _stale_group(gate, [[1, 2, 3], [2, 2]])  # oldest token at 1: lag 4 once the trainer is at 5
    _, fresh = _stale_group(gate, [[4], [4, 5]])
    gate.note_version(5)
    result = gate.take(1)
    assert result.groups == [fresh] and result.lags == [1, 1]
    [again] = result.regenerate
    assert [s.prompt for s in again] == ["q0", "q1"] and [s.index for s in again] == [0, 1]
    assert all(s.response_length == 0 and s.tokens == [1, 2] and s.reward is None for s in again)
    assert all(s.status == Sample.Status.PENDING and ADMITTED_KEY not in s.metadata for s in again)
    counts = gate.pop_counts()
    assert counts.regenerated_groups == 1 and counts.dropped_groups == 0
    assert gate.pop_counts().regenerated_groups == 0  # counted once, per take


def test_a_stale_group_behind_a_full_batch_is_handled_in_the_same_take():
    """A stale group queued after the fresh groups that fill the batch is regenerated now, and the
    fresh group that did not fit waits for the next take."""
    gate = AsyncGate(StalenessRule(max_lag=1), batch_groups=1, max_in_flight=4, version=3)
    _, fresh = _stale_group(gate, [[4], [4, 5]])
    _stale_group(gate, [[1, 2, 3], [2, 2]])
    _, later = _stale_group(gate, [[5], [5]])
    gate.note_version(5)
    result = gate.take(1)
    assert result.groups == [fresh] and len(result.regenerate) == 1
    assert [group for _, group in gate.ready] == [later]
    assert gate.take(1).groups == [later] and gate.total.regenerated_groups == 1


def test_a_stale_group_is_dropped_with_drop():
    gate = AsyncGate(StalenessRule(max_lag=0, action="drop"), batch_groups=1, max_in_flight=4, version=2)
    _stale_group(gate, [[1], [2]])
    gate.note_version(2)
    result = gate.take(1)
    assert result.groups == [] and result.regenerate == [] and len(result.stale) == 1
    assert gate.total.dropped_groups == 1


def test_stale_tokens_leave_the_loss_under_mask_offpolicy():
    """With --partial-rollout --mask-offpolicy-in-partial-rollout the stale beginning becomes context."""
    gate = AsyncGate(
        StalenessRule(max_lag=1, mask_stale_tokens=True), batch_groups=1, max_in_flight=4, version=1
    )
    _, group = _stale_group(gate, [[1, 1, 2, 3], [3, 3]], masks=[[1, 0, 1, 1], [1, 1]])
    gate.note_version(3)
    result = gate.take(1)
    assert result.groups == [group]
    assert group[0].loss_mask == [0, 0, 1, 1] and group[1].loss_mask == [1, 1]
    assert gate.total.masked_stale_tokens == 1  # the second token was masked already (a tool's)
    assert sorted(result.lags) == [0, 1]


def test_a_group_with_nothing_fresh_left_falls_to_the_action_under_mask():
    gate = AsyncGate(
        StalenessRule(max_lag=0, mask_stale_tokens=True), batch_groups=1, max_in_flight=4, version=1
    )
    _stale_group(gate, [[1, 1], [1]])
    gate.note_version(2)
    result = gate.take(1)
    assert result.groups == [] and len(result.regenerate) == 1
    assert gate.total.masked_stale_tokens == 3 and gate.total.regenerated_groups == 1


def test_an_untagged_token_counts_as_the_admission_version():
    """No tag (vLLM 0.26 has no /update_weight_version): the version the group began with, a lower bound."""
    gate = AsyncGate(StalenessRule(max_lag=1), batch_groups=1, max_in_flight=4, version=1)
    group = [Sample(index=0, prompt="q", tokens=[1], label="a")]
    ticket = gate.admit(group)
    group[0].append_response_tokens([5, 6], [-1.0, -1.0])
    gate.finish(ticket, group)
    gate.note_version(3)
    assert gate.take(1).groups == [] and gate.total.regenerated_groups == 1


def test_admission_k0_is_synchronous_and_k1_runs_one_batch_ahead():
    for max_lag, expected in ((0, 2), (1, 4), (2, 6)):
        gate = AsyncGate(StalenessRule(max_lag=max_lag), batch_groups=2, max_in_flight=64, version=1)
        admitted = 0
        while gate.may_admit():
            gate.admit([Sample(index=admitted, prompt="q", tokens=[1])])
            admitted += 1
        assert admitted == expected
    unbounded = AsyncGate(StalenessRule(), batch_groups=2, max_in_flight=5)
    count = 0
    while unbounded.may_admit():
        unbounded.admit([Sample(index=count, prompt="q", tokens=[1])])
        count += 1
    assert count == 5  # only the concurrency cap


def test_a_take_that_waits_can_still_admit_what_it_needs():
    """K = 0, one group filtered out: the take still needs a group, so one more is admitted."""
    gate = AsyncGate(StalenessRule(max_lag=0), batch_groups=2, max_in_flight=8, version=1)
    tickets = [(gate.admit(g), g) for g in ([Sample(index=i, prompt="q", tokens=[1])] for i in range(2))]
    assert not gate.may_admit()
    (t0, g0), (t1, g1) = tickets
    g0[0].append_response_tokens([5], [-1.0])
    gate.finish(t0, g0)
    gate.finish(t1, g1, keep=False)  # the dynamic-sampling filter dropped it
    assert len(gate.take(2).groups) == 1
    assert gate.may_admit() and gate.total.filtered_groups == 1


def test_rule_refuses_a_negative_bound_and_an_unknown_action():
    with pytest.raises(ValueError, match="--max-policy-version-lag"):
        StalenessRule(max_lag=-1)
    with pytest.raises(ValueError, match="--stale-sample-action"):
        StalenessRule(max_lag=1, action="keep")


def test_spans_of_a_continued_sample_land_at_its_response_positions():
    """A partial sample continued with new weights: the second answer's spans start where the first ended."""
    sample = Sample(index=0, prompt="q", tokens=[1, 2])
    first = {"token_ids": [5, 6, 7], "logprobs": None, "finish_reason": "abort", "weight_versions": []}
    first["weight_versions"] = [
        {"version": "1", "start": 0, "end": 2},
        {"version": "2", "start": 2, "end": 3},
    ]
    apply_generate_output(sample, first, tokenizer=None)
    second = {
        "token_ids": [8, 9],
        "finish_reason": "stop",
        "weight_versions": [{"version": "3", "start": 0, "end": 2}],
    }
    apply_generate_output(sample, second, tokenizer=None)
    assert token_versions(sample) == [1, 1, 2, 3, 3]
    assert sample.weight_versions == ["1", "2", "3"]
    sample.loss_mask = [0, 0, 0, 1, 1]  # --mask-offpolicy-in-partial-rollout masked the first answer
    assert oldest_trained_version(sample, fallback=0) == 3
    assert oldest_trained_version(Sample(tokens=[1], response_length=0), fallback=2) is None


def test_slime_style_meta_info_records_spans_too():
    """Plugins append tokens with the engine's answer as meta_info (slime's spelling): same spans."""
    sample = Sample(index=0, prompt="q", tokens=[1])
    sample.append_response_tokens([4, 4], [-1.0, -1.0], meta_info={"weight_version": "5"})
    sample.append_response_tokens([9], trainable=False)
    meta = {"weight_versions": [{"version": "6", "start": 0, "end": 1}], "finish_reason": "stop"}
    sample.append_response_tokens([4], [-1.0], meta_info=meta)
    assert token_versions(sample) == [5, 5, None, 6]


def test_idle_clock_counts_only_time_with_nothing_in_flight():
    clock = IdleClock(now=0.0)
    clock.note(2, now=1.0)  # idle 0..1
    clock.note(0, now=3.0)  # busy 1..3
    assert clock.pop(now=4.0) == pytest.approx(2.0)  # idle 0..1 and 3..4
    clock.note(1, now=6.0)
    assert clock.pop(now=7.0) == pytest.approx(2.0)  # idle 4..6
