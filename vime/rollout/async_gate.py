"""The fully-async mode's ledger: which groups may start generating, and which finished ones train.

Pure bookkeeping (no I/O, no clock of its own), driven by the worker of
:mod:`vime.rollout.async_rollout` and exercised directly by the property tests.

**Versions and lag.** Version v is the trainer's v-th weight push (the tag the engines put on every
token they generate). When the trainer takes a batch it holds the newest pushed weights, version
``version``; a sample's lag is ``version`` minus the oldest version among the tokens its loss trains
on (:func:`vime.utils.weight_versions.oldest_trained_version`; an untagged token counts as the
version the engines held when its group was admitted, a lower bound). With
``--max-policy-version-lag K`` no sample whose lag exceeds K is trained on.

**Admission** (AReaL's rule, counted in groups). Finished groups are taken in the order they
finish; the trainer takes ``takes_per_version`` batches (``--update-weights-interval``) per
version. A group admitted now is taken after the groups already pending (in flight, or finished
and not taken), so it is admitted only while ``pending`` is below what the takes of this version
still need plus K versions' worth of batches: finishing in order, it is then trained at most K
versions after it began. A group that finishes out of order can still fall behind; the take
catches it.

**The rule for a stale group** (at the take, counted):

- With ``--partial-rollout --mask-offpolicy-in-partial-rollout``, tokens older than the bound
  leave the loss (they stay as context, as continued partial samples do); the group trains on the
  rest. Only a group left with no trained token goes on to the next point.
- ``--stale-sample-action regenerate`` (default): the group goes back to the data source as its
  prompts and is generated again from the start with the current weights. Its valid tokens cannot
  be kept without the stale ones: a response's versions never decrease, so the stale tokens are
  its beginning.
- ``--stale-sample-action drop``: the group is discarded; its prompts are not trained on.
"""

from __future__ import annotations

import copy
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from vime.rollout.rollout_config import RolloutConfig
from vime.utils.args.fully_async import STALE_ACTIONS
from vime.utils.types import Sample
from vime.utils.weight_versions import SPANS_KEY, oldest_trained_version, token_versions, versions_used

ADMITTED_KEY = "async_admitted_version"  # in Sample.metadata: the engines' version when it began


@dataclass(frozen=True)
class StalenessRule:
    """The bound and what happens to a group beyond it (see the module docstring)."""

    max_lag: int | None = None
    action: str = "regenerate"
    mask_stale_tokens: bool = False

    def __post_init__(self) -> None:
        if self.max_lag is not None and self.max_lag < 0:
            raise ValueError(f"--max-policy-version-lag must be 0 or more, got {self.max_lag}")
        if self.action not in STALE_ACTIONS:
            raise ValueError(
                f"--stale-sample-action must be one of {', '.join(STALE_ACTIONS)}, not {self.action!r}"
            )

    @classmethod
    def from_args(cls, args: Any) -> StalenessRule:
        cfg = RolloutConfig.from_args(args)
        return cls(
            max_lag=cfg.max_policy_version_lag,
            action=cfg.stale_sample_action or "regenerate",
            mask_stale_tokens=cfg.masks_offpolicy,
        )


def samples_of(group: list) -> list[Sample]:
    """A group's samples (a generate hook may have turned one sample into a list of them)."""
    return [s for item in group for s in (item if isinstance(item, list) else [item])]


def prompt_form(sample: Sample) -> Sample:
    """``sample`` as it was before generation: its prompt, label and metadata, no response."""
    fresh = copy.deepcopy(sample)
    fresh.tokens = list(sample.tokens[: sample.prompt_length])
    fresh.response, fresh.response_length = "", 0
    fresh.loss_mask = fresh.rollout_log_probs = fresh.teacher_log_probs = fresh.reward = None
    fresh.rollout_routed_experts = None
    fresh.weight_versions = []
    fresh.status = Sample.Status.PENDING
    fresh.remove_sample = False
    fresh.session_id = None
    for key in (SPANS_KEY, ADMITTED_KEY, "start_rollout_id"):
        fresh.metadata.pop(key, None)
    return fresh


@dataclass
class Ticket:
    """One admitted group: when it began and what a regeneration starts from."""

    number: int
    admitted_version: int
    prompts: list[Sample]


@dataclass
class TakeResult:
    """What one take hands out: groups to train on, prompt groups to generate again, and counts."""

    groups: list[list[Sample]] = field(default_factory=list)
    regenerate: list[list[Sample]] = field(default_factory=list)
    stale: list[list] = field(default_factory=list)  # the stale groups as they finished
    lags: list[int] = field(default_factory=list)  # per trained sample
    multi_version_samples: int = 0  # samples whose tokens came from more than one version
    untagged_samples: int = 0  # samples with trained tokens the engine did not tag


@dataclass
class GateCounts:
    """Events since the last take (``reset``) or over the run."""

    regenerated_groups: int = 0
    dropped_groups: int = 0
    masked_stale_tokens: int = 0
    filtered_groups: int = 0  # dropped by --dynamic-sampling-filter-path
    aborted_groups: int = 0  # came back aborted (engine restart, shutdown): returned to the source

    def as_metrics(self, prefix: str) -> dict[str, float]:
        return {f"{prefix}{name}": float(value) for name, value in vars(self).items()}


class AsyncGate:
    """Admission, completion and take of groups under a :class:`StalenessRule`."""

    def __init__(
        self,
        rule: StalenessRule,
        batch_groups: int,
        max_in_flight: int,
        *,
        max_ready: int | None = None,
        takes_per_version: int = 1,
        version: int = 0,
    ) -> None:
        if batch_groups < 1 or max_in_flight < 1 or takes_per_version < 1:
            raise ValueError(
                "a batch, the groups in flight and the takes per version must each be at least 1"
            )
        self.rule = rule
        self.batch_groups = batch_groups
        self.max_in_flight = max_in_flight
        self.max_ready = max_ready if max_ready is not None else max(batch_groups, max_in_flight)
        self.takes_per_version = takes_per_version
        self.version = version
        self.taken_at_version = 0  # groups taken for training since the version changed
        self.in_flight: dict[int, Ticket] = {}
        self.ready: deque[tuple[Ticket, list]] = deque()
        self.since_take = GateCounts()
        self.total = GateCounts()
        self.lag_counts: Counter[int] = Counter()  # over the run, per trained sample
        self._numbers = 0

    # ----- admission ------------------------------------------------------------------------
    def may_admit(self) -> bool:
        if len(self.in_flight) >= self.max_in_flight:
            return False
        if self.rule.max_lag is None:
            return len(self.ready) < self.max_ready
        per_version = self.takes_per_version * self.batch_groups
        this_version = max(0, per_version - self.taken_at_version)
        return len(self.in_flight) + len(self.ready) < this_version + self.rule.max_lag * per_version

    def admit(self, group: list[Sample]) -> Ticket:
        """Record that ``group`` starts generating now (its samples remember the version)."""
        self._numbers += 1
        prompts = [prompt_form(s) for s in samples_of(group)]
        for sample in samples_of(group):
            sample.metadata.setdefault(ADMITTED_KEY, self.version)  # a continued partial keeps its first
        ticket = Ticket(self._numbers, self.version, prompts)
        self.in_flight[ticket.number] = ticket
        return ticket

    # ----- completion -------------------------------------------------------------------------
    def finish(self, ticket: Ticket, group: list, keep: bool = True) -> None:
        """A group came back complete; ``keep=False``: the dynamic-sampling filter dropped it."""
        self.in_flight.pop(ticket.number)
        if keep:
            self.ready.append((ticket, group))
        else:
            self._count("filtered_groups")

    def aborted(self, ticket: Ticket, group: list, keep_partial: bool) -> list[Sample]:
        """A group came back aborted: what goes back to the data source (the partial samples with
        ``--partial-rollout``, else its prompts)."""
        self.in_flight.pop(ticket.number)
        self._count("aborted_groups")
        if keep_partial:
            return samples_of(group)
        return [copy.deepcopy(s) for s in ticket.prompts]

    def note_version(self, version: int) -> None:
        """The engines now serve (and the trainer holds) ``version``."""
        if int(version) != self.version:
            self.version, self.taken_at_version = int(version), 0

    # ----- take ---------------------------------------------------------------------------------
    def take(self, limit: int) -> TakeResult:
        """Up to ``limit`` finished groups within the bound, in the order they finished. Stale groups
        anywhere in the queue are handled now by the rule (regenerate: in ``regenerate``; drop:
        counted), not only those met before the batch is full: a stale group only gets staler, and
        while it waits it holds a place the bound would give to a fresh group."""
        result = TakeResult()
        waiting: deque[tuple[Ticket, list]] = deque()
        while self.ready:
            ticket, group = self.ready.popleft()
            if not self._within_bound(ticket, group):
                result.stale.append(group)
                if self.rule.action == "regenerate":
                    result.regenerate.append([copy.deepcopy(s) for s in ticket.prompts])
                    self._count("regenerated_groups")
                else:
                    self._count("dropped_groups")
            elif len(result.groups) < limit:
                self._take_one(ticket, group, result)
            else:
                waiting.append((ticket, group))
        self.ready = waiting
        return result

    def _take_one(self, ticket: Ticket, group: list, result: TakeResult) -> None:
        result.groups.append(group)
        self.taken_at_version += 1
        for sample in samples_of(group):
            oldest = self.oldest(ticket, sample)
            if oldest is not None:
                result.lags.append(self.version - oldest)
                self.lag_counts[self.version - oldest] += 1
            result.multi_version_samples += len(versions_used(sample)) > 1
            result.untagged_samples += any(v is None for v in token_versions(sample)) and bool(
                sample.response_length
            )

    def oldest(self, ticket: Ticket, sample: Sample) -> int | None:
        return oldest_trained_version(sample, sample.metadata.get(ADMITTED_KEY, ticket.admitted_version))

    def _within_bound(self, ticket: Ticket, group: list) -> bool:
        bound = self.rule.max_lag
        if bound is None:
            return True
        floor = self.version - bound  # the oldest version a trained token may have
        samples = samples_of(group)
        if all(self._lag_ok(ticket, s, floor) for s in samples):
            return True
        if not self.rule.mask_stale_tokens:
            return False
        for sample in samples:
            self._mask_older_than(ticket, sample, floor)
        # a group whose every token left the loss has nothing to train: the action applies
        return any(self.oldest(ticket, s) is not None for s in samples)

    def _lag_ok(self, ticket: Ticket, sample: Sample, floor: int) -> bool:
        oldest = self.oldest(ticket, sample)
        return oldest is None or oldest >= floor

    def _mask_older_than(self, ticket: Ticket, sample: Sample, floor: int) -> None:
        fallback = sample.metadata.get(ADMITTED_KEY, ticket.admitted_version)
        mask = list(sample.loss_mask) if sample.loss_mask is not None else [1] * sample.response_length
        for position, version in enumerate(token_versions(sample)):
            value = version if version is not None else fallback
            if mask[position] and value is not None and value < floor:
                mask[position] = 0
                self._count("masked_stale_tokens")
        sample.loss_mask = mask

    def _count(self, name: str) -> None:
        setattr(self.since_take, name, getattr(self.since_take, name) + 1)
        setattr(self.total, name, getattr(self.total, name) + 1)

    def pop_counts(self) -> GateCounts:
        """The events since the last call (and start counting again)."""
        counts, self.since_take = self.since_take, GateCounts()
        return counts


class IdleClock:
    """Seconds the engines had none of our requests in flight (fed the count at every change)."""

    def __init__(self, now: float) -> None:
        self.idle_since: float | None = now  # idle until the first admission
        self.idle = 0.0

    def note(self, in_flight: int, now: float) -> None:
        if in_flight and self.idle_since is not None:
            self.idle += now - self.idle_since
            self.idle_since = None
        elif not in_flight and self.idle_since is None:
            self.idle_since = now

    def pop(self, now: float) -> float:
        """Idle seconds since the last call, the current idle stretch included."""
        if self.idle_since is not None:
            self.idle += now - self.idle_since
            self.idle_since = now
        idle, self.idle = self.idle, 0.0
        return idle
