"""Rule-based grading of math answers: the public entry points of the math reward.

The work is split by concern: :mod:`.math_extract` finds the boxed answer, :mod:`.math_normalize`
canonicalizes LaTeX, :mod:`.math_compare` decides equality. This module ties them together
under the names reward functions and plugins use.
"""

from __future__ import annotations

from .math_compare import HAVE_SYMPY, math_answers_equal, parse_number
from .math_extract import last_boxed_content, strip_think
from .math_normalize import normalize_math_answer

__all__ = [
    "HAVE_SYMPY",
    "extract_answer",
    "extract_boxed_answer",
    "grade_answer_verl",
    "grade_math_answer",
    "math_answers_equal",
    "normalize_math_answer",
    "parse_number",
    "reference_answers",
    "strip_think",
]


def extract_boxed_answer(text: str | None) -> str | None:
    """The content of the last ``\\boxed{}`` / ``\\fbox{}`` in ``text`` (nested braces allowed)."""
    return last_boxed_content(text)


def reference_answers(truth: object) -> list[str]:
    """The acceptable answers a label names: one string, or each item of a list.

    A reference that is itself boxed (``"\\boxed{7}"``) counts by its content.
    """
    items = truth if isinstance(truth, list | tuple) else [truth]
    answers = []
    for item in items:
        if item is None:
            continue
        text = str(item)
        boxed = last_boxed_content(text)
        answers.append(boxed if boxed is not None else text)
    return [a for a in answers if a.strip()]


def grade_math_answer(response: str, truth: object) -> bool:
    """Whether the last boxed answer in ``response`` equals one of the reference answers.

    A response without a boxed answer is wrong: the prompt asked for one. The last box counts,
    wherever it is (reasoning models box their final answer after ``</think>``).
    """
    given = last_boxed_content(response or "")
    if given is None:
        return False
    return any(math_answers_equal(given, answer) for answer in reference_answers(truth))


def extract_answer(passage: str) -> str | None:
    """slime's name: the last boxed answer of ``passage``, or None when it has no ``\\boxed``."""
    return last_boxed_content(passage) if "\\boxed" in (passage or "") else None


def grade_answer_verl(solution_str: str, ground_truth: object) -> bool:
    """slime's (verl's) math grade: the last boxed answer of ``solution_str`` against the label
    (itself possibly boxed); False for an empty label or an unboxed solution."""
    if not ground_truth:
        return False
    truth = str(ground_truth)
    if "\\boxed" in truth:
        truth = extract_answer(truth) or ""
    given = extract_answer(solution_str)
    return given is not None and bool(truth) and math_answers_equal(given, truth)
