"""DeepScaleR's rule-based reward: 1 when the boxed answer after the reasoning is right, else 0.

Only the text after ``</think>`` (or after ``###Response``) counts: a response that never
closes its reasoning has no final answer.
"""

from __future__ import annotations

from .math_compare import math_answers_equal
from .math_extract import last_boxed_content
from .math_utils import reference_answers


def deepscaler_reward(response: str, truth: object) -> int:
    """1 if the final boxed answer matches one of the reference answers, else 0."""
    response = response or ""
    if "</think>" in response:
        solution = response.rsplit("</think>", 1)[1]
    elif "###Response" in response:
        solution = response.split("###Response", 1)[1]
    else:
        return 0
    given = last_boxed_content(solution)
    if given is None:
        return 0
    return int(any(math_answers_equal(given, answer) for answer in reference_answers(truth)))
