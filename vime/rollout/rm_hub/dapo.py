"""DAPO's reward: the answer on the last ``Answer: ...`` line, scored +1 right / -1 wrong.

The result is a dict, as in slime (``score``, ``acc``, ``pred``), so slime launch scripts that
pass ``--reward-key score`` keep working; without ``--reward-key`` the reward hub says so.
"""

from __future__ import annotations

import re

from .math_compare import math_answers_equal
from .math_extract import strip_think
from .math_utils import reference_answers

_ANSWER_LINE = re.compile(r"(?i)answer\s*:\s*([^\n]+)")


def extract_dapo_answer(response: str) -> str | None:
    """The text after the last ``Answer:`` in the response (after any reasoning block)."""
    matches = _ANSWER_LINE.findall(strip_think(response or ""))
    if not matches:
        return None
    answer = matches[-1].strip().strip("*").strip()
    return answer or None


def dapo_reward(response: str, truth: object) -> dict:
    """``{"score": 1.0 | -1.0, "acc": bool, "pred": str}``."""
    prediction = extract_dapo_answer(response)
    correct = prediction is not None and any(
        math_answers_equal(prediction, answer) for answer in reference_answers(truth)
    )
    return {"score": 1.0 if correct else -1.0, "acc": correct, "pred": prediction or ""}
