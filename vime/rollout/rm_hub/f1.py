"""Token-level F1 between a response and a reference answer, as in SQuAD-style QA scoring."""

from __future__ import annotations

import re
import string
from collections import Counter

from .math_extract import strip_think

_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_CLOSED_ANSWERS = {"yes", "no", "noanswer"}


def normalize_qa_text(text: str) -> str:
    """Lowercase, drop punctuation and articles, collapse whitespace."""
    text = str(text).lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def f1_components(prediction: str | None, truth: str) -> tuple[float, float, float]:
    """``(f1, precision, recall)``; a yes/no answer only scores when it matches exactly."""
    if prediction is None:
        return 0.0, 0.0, 0.0
    predicted, expected = normalize_qa_text(prediction), normalize_qa_text(truth)
    if (predicted in _CLOSED_ANSWERS or expected in _CLOSED_ANSWERS) and predicted != expected:
        return 0.0, 0.0, 0.0
    predicted_tokens, expected_tokens = predicted.split(), expected.split()
    overlap = sum((Counter(predicted_tokens) & Counter(expected_tokens)).values())
    if overlap == 0:
        return 0.0, 0.0, 0.0
    precision = overlap / len(predicted_tokens)
    recall = overlap / len(expected_tokens)
    return 2 * precision * recall / (precision + recall), precision, recall


def f1_reward(response: str | None, truth: object) -> float:
    """Best F1 of the response (after any reasoning block) against each acceptable answer."""
    answers = truth if isinstance(truth, list | tuple) else [truth]
    text = strip_think(response) if response is not None else None
    return max((f1_components(text, str(answer))[0] for answer in answers), default=0.0)
