"""A small synthetic arithmetic task, so training can be shown end to end with nothing downloaded.

Each row asks for one sum or difference and wants the result in ``\\boxed{}``; the label is
the exact integer, which the ``math`` reward checks. Rows use the default ``--input-key``
(``input``) and a ``label`` column (``--label-key label``).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

PROMPT_TEMPLATE = "What is {a}{op}{b}? Put the answer in \\boxed{{}}."


def arithmetic_rows(n: int, seed: int = 0, max_operand: int = 9, operators: str = "+-") -> list[dict]:
    """``n`` rows ``{"input", "label", "metadata"}``; the same seed always gives the same rows."""
    if n < 0 or max_operand < 0 or not operators or set(operators) - set("+-*"):
        raise ValueError(
            f"arithmetic_rows(n={n}, max_operand={max_operand}, operators={operators!r}): "
            f"n and max_operand must be >= 0 and operators a non-empty string of + - *"
        )
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        a, b = rng.randint(0, max_operand), rng.randint(0, max_operand)
        op = rng.choice(operators)
        value = a + b if op == "+" else a - b if op == "-" else a * b
        rows.append(
            {
                "input": PROMPT_TEMPLATE.format(a=a, op=op, b=b),
                "label": str(value),
                "metadata": {"a": a, "b": b, "op": op},
            }
        )
    return rows


def write_arithmetic_dataset(
    path: str | Path, n: int, seed: int = 0, max_operand: int = 9, operators: str = "+-"
) -> Path:
    """Write :func:`arithmetic_rows` to a JSONL file (parents created) and return its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = arithmetic_rows(n, seed=seed, max_operand=max_operand, operators=operators)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path
