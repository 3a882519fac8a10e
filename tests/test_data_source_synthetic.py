"""The synthetic arithmetic task: deterministic rows whose labels the math reward accepts."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from vime.rollout.data_source import RolloutDataSource
from vime.rollout.rm_hub import async_rm
from vime.rollout.synthetic import arithmetic_rows, write_arithmetic_dataset


def test_same_seed_same_file_other_seed_other_file(tmp_path: Path) -> None:
    a = write_arithmetic_dataset(tmp_path / "a.jsonl", 50, seed=3, max_operand=20)
    b = write_arithmetic_dataset(tmp_path / "sub" / "b.jsonl", 50, seed=3, max_operand=20)
    c = write_arithmetic_dataset(tmp_path / "c.jsonl", 50, seed=4, max_operand=20)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    assert len(a.read_text().splitlines()) == 50


def test_labels_are_the_true_results() -> None:
    for row in arithmetic_rows(200, seed=0, max_operand=12, operators="+-*"):
        a, op, b = re.match(
            r"What is (\d+)([+\-*])(\d+)\? Put the answer in \\boxed\{\}\.", row["input"]
        ).groups()
        expected = {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[op]
        assert row["label"] == str(expected)
        assert 0 <= int(a) <= 12 and 0 <= int(b) <= 12
        assert row["metadata"] == {"a": int(a), "b": int(b), "op": op}


def test_rows_feed_the_data_source_and_the_math_reward(tmp_path: Path) -> None:
    path = write_arithmetic_dataset(tmp_path / "arith.jsonl", 8, seed=0)
    source = RolloutDataSource(
        SimpleNamespace(prompt_data=str(path), label_key="label", n_samples_per_prompt=2)
    )
    args = SimpleNamespace(rm_type="math", custom_rm_path=None, reward_key=None)
    for group in source.get_samples(8):
        right, wrong = group
        right.response = f"The result is \\boxed{{{right.label}}}."
        wrong.response = f"The result is \\boxed{{{int(wrong.label) + 1}}}."
        assert asyncio.run(async_rm(args, right)) == 1
        assert asyncio.run(async_rm(args, wrong)) == 0
    assert json.loads(path.read_text().splitlines()[0]).keys() == {"input", "label", "metadata"}


@pytest.mark.parametrize("kwargs", [{"n": -1}, {"n": 1, "max_operand": -2}, {"n": 1, "operators": "/"}])
def test_bad_arguments(kwargs: dict) -> None:
    with pytest.raises(ValueError, match="n and max_operand must be >= 0"):
        arithmetic_rows(**kwargs)
