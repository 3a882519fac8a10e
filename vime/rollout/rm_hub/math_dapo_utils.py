"""slime's ``math_dapo_utils.compute_score`` (what retool-style plugins import), on vime's math checks.

``strict_box_verify``: only the last ``\\boxed{...}`` of the final 100 characters counts, compared
as text after normalization; otherwise the last ``Answer:`` line, compared as math (vime's DAPO
reward). Either way ``{"score": 1.0 | -1.0, "acc": bool, "pred": str | None}``.
"""

from __future__ import annotations

from .dapo import dapo_reward
from .math_extract import last_boxed_content
from .math_normalize import normalize_math_answer


def compute_score(
    solution_str: str,
    ground_truth: str,
    strict_box_verify: bool = False,
    pause_tokens_index: list[int] | None = None,
) -> dict:
    """Score the tail of ``solution_str`` (300 characters, as slime) against ``ground_truth``."""
    tail = (solution_str or "")[-300:]
    if not strict_box_verify:
        return dapo_reward(tail, ground_truth)
    window = tail[pause_tokens_index[-1] - 100 :] if pause_tokens_index else tail[-100:]
    pred = last_boxed_content(window)
    correct = pred is not None and normalize_math_answer(pred) == normalize_math_answer(ground_truth)
    return {"score": 1.0 if correct else -1.0, "acc": correct, "pred": pred}
