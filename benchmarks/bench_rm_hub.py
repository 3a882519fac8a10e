"""How long the rule-based rewards take per sample, and how much they delay an asyncio loop.

Rule-based rewards run inside the rollout's event loop, so their cost is time the loop cannot
spend on HTTP traffic to the engines. Reference, measured in the same run: plain string
equality of the extracted answers (the least a grader can do).

    .venv/bin/python benchmarks/bench_rm_hub.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from types import SimpleNamespace

from vime.rollout.rm_hub import async_rm
from vime.rollout.rm_hub.math_compare import HAVE_SYMPY, math_answers_equal
from vime.rollout.rm_hub.math_extract import last_boxed_content
from vime.rollout.synthetic import arithmetic_rows
from vime.utils.types import Sample

# (response's boxed answer, label): the shapes that take each path through the comparison
CATEGORIES = {
    "same text": [("7", "7"), ("42", "42"), ("-3", "-3")],
    "normalized text": [
        (r"\dfrac{1}{2}", r"\frac12"),
        (r"10\text{ cm}", "10"),
        (r"\left(1, 2\right)", "(1,2)"),
    ],
    "numeric value": [("0.5", r"\frac{1}{2}"), (r"50\%", "0.5"), ("1,000", "1000.0")],
    "algebra (sympy)": [(r"2\sqrt{2}", r"\sqrt{8}"), ("x^2+2x+1", "(x+1)^2"), (r"\frac{\pi}{2}", r"\pi/2")],
    "wrong answer": [("8", "7"), (r"\frac{1}{3}", "0.33"), ("x^2", "x^3")],
}


def time_per_call(fn, pairs, rounds: int) -> float:
    start = time.perf_counter()
    for _ in range(rounds):
        for given, truth in pairs:
            fn(given, truth)
    return (time.perf_counter() - start) / (rounds * len(pairs))


def plain_equality(given: str, truth: str) -> bool:
    return last_boxed_content(rf"\boxed{{{given}}}") == truth


def graded(given: str, truth: str) -> bool:
    return math_answers_equal(last_boxed_content(rf"\boxed{{{given}}}"), truth)


async def batch_throughput(samples: list[Sample]) -> float:
    args = SimpleNamespace(rm_type="math", custom_rm_path=None, reward_key=None, eval_reward_key=None)
    start = time.perf_counter()
    await asyncio.gather(*(async_rm(args, s) for s in samples))
    return len(samples) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=200)
    options = parser.parse_args()
    print(f"sympy available: {HAVE_SYMPY}")
    reference = statistics.median(
        time_per_call(
            plain_equality, [case for cases in CATEGORIES.values() for case in cases], options.rounds
        )
        for _ in range(options.repeats)
    )
    print(f"{'category':<18} {'median us/answer':>17} {'x string equality':>18}")
    print(f"{'(reference)':<18} {reference * 1e6:>17.1f} {1.0:>18.1f}")
    for name, pairs in CATEGORIES.items():
        for given, truth in pairs:  # warm caches (sympy parse cache) the way a long run would
            graded(given, truth)
        median = statistics.median(
            time_per_call(graded, pairs, options.rounds) for _ in range(options.repeats)
        )
        print(f"{name:<18} {median * 1e6:>17.1f} {median / reference:>18.1f}")

    rows = arithmetic_rows(2000, seed=0, max_operand=99)
    samples = [
        Sample(index=i, response=f"so \\boxed{{{int(r['label']) + i % 2}}}", label=r["label"])
        for i, r in enumerate(rows)
    ]
    rates = [asyncio.run(batch_throughput(samples)) for _ in range(options.repeats)]
    print(
        f"async_rm math on {len(samples)} synthetic samples: median {statistics.median(rates):,.0f} samples/s"
    )


if __name__ == "__main__":
    main()
