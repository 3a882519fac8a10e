"""What the engines themselves spent on one rollout, from vLLM's Prometheus ``/metrics``.

A rollout's wall time mixes the engine's work with vime's (requests, rewards, conversion). Reading
vLLM's own histograms before and after the generation splits them: the mean request, queue, prefill
and decode seconds as the engine timed them, the mean gap between two tokens of a request, how many
engine steps ran and how many tokens each carried, and whether the KV cache ran short (preemptions).
If the engine's mean request is far below the rollout's wall time, the time went elsewhere.

Counters and histograms only grow while a server lives, so the difference of two scrapes is what
happened between them; a restarted engine (counts that went down) yields no figures that step.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import requests
from prometheus_client.parser import text_string_to_metric_families

# vLLM histogram -> vime's name for its mean (sum / count); the same names in vLLM 0.26 and 0.32
HISTOGRAMS = {
    "vllm:e2e_request_latency_seconds": "request_s",
    "vllm:request_queue_time_seconds": "queue_s",
    "vllm:request_prefill_time_seconds": "prefill_s",
    "vllm:request_decode_time_seconds": "decode_s",
    "vllm:inter_token_latency_seconds": "inter_token_s",
    "vllm:iteration_tokens_total": "tokens_per_step",
}
COUNTERS = {"vllm:num_preemptions": "preemptions", "vllm:generation_tokens": "generation_tokens"}


@dataclass
class EngineTotals:
    """Running totals of one scrape, summed over every label set (and over engines by ``+``)."""

    sums: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    counts: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    counters: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    @classmethod
    def parse(cls, text: str) -> EngineTotals:
        totals = cls()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                base, _, suffix = sample.name.rpartition("_")
                if base in HISTOGRAMS and suffix in ("sum", "count"):
                    (totals.sums if suffix == "sum" else totals.counts)[base] += sample.value
                elif suffix == "total" and base in COUNTERS:
                    totals.counters[base] += sample.value
        return totals

    def __add__(self, other: EngineTotals) -> EngineTotals:
        out = EngineTotals()
        for mine, theirs, target in (
            (self.sums, other.sums, out.sums),
            (self.counts, other.counts, out.counts),
            (self.counters, other.counters, out.counters),
        ):
            for key in set(mine) | set(theirs):
                target[key] = mine.get(key, 0.0) + theirs.get(key, 0.0)
        return out

    def since(self, earlier: EngineTotals) -> dict[str, float]:
        """``rollout/engine_*`` metrics of what happened between ``earlier`` and this scrape."""
        if any(self.counts.get(k, 0.0) < v for k, v in earlier.counts.items()):
            return {}  # an engine restarted between the scrapes: its counts began again
        counts = {m: self.counts.get(m, 0.0) - earlier.counts.get(m, 0.0) for m in HISTOGRAMS}
        out = {"rollout/engine_requests": counts["vllm:e2e_request_latency_seconds"]}
        for metric, name in HISTOGRAMS.items():
            if counts[metric] > 0:
                out[f"rollout/engine_{name}_mean"] = (
                    self.sums[metric] - earlier.sums.get(metric, 0.0)
                ) / counts[metric]
        if counts["vllm:iteration_tokens_total"] > 0:  # one observation per engine step
            out["rollout/engine_steps"] = counts["vllm:iteration_tokens_total"]
        for metric, name in COUNTERS.items():
            if metric in self.counters:
                out[f"rollout/engine_{name}"] = self.counters[metric] - earlier.counters.get(metric, 0.0)
        return out


def scrape(urls: Iterable[str], timeout_s: float = 5.0) -> EngineTotals | None:
    """The totals of every engine at ``urls`` together; None when one cannot answer (the rollout
    then goes on without these figures: they explain a step, they must not stop one)."""
    urls = list(urls)
    if not urls:
        return None

    def one(url: str) -> EngineTotals:
        answer = requests.get(f"{url}/metrics", timeout=timeout_s)
        answer.raise_for_status()
        return EngineTotals.parse(answer.text)

    try:
        with ThreadPoolExecutor(len(urls)) as pool:
            parts = list(pool.map(one, urls))
    except (requests.RequestException, ValueError):
        return None
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total
