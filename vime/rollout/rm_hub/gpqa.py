"""Multiple-choice scoring (GPQA, MMLU style): find the option the model chose and compare.

The model may answer with a letter in many shapes ("The answer is (C)", "Answer: C", "C.",
``\\boxed{C}``) or by repeating the option's text; the reference may be a letter, an index,
or the option's text (with ``metadata["choices"]``).
"""

from __future__ import annotations

import re
import string
from typing import Any

from .math_extract import last_boxed_content, strip_think

_DEFAULT_LETTERS = list(string.ascii_uppercase[:10])
# An explicit statement of the choice; the keyword is case-insensitive, the letter is not
# (so "the answer is a fraction" does not read as choice A) unless it is in parentheses.
_STATED = re.compile(
    r"(?i:answer|option|choice)(?:\s*(?i:is))?[\s:*\-]*(?:\(([A-Za-z])\)|([A-Z])(?![A-Za-z0-9]))"
)
_CORRECT_LETTER = re.compile(r"(?:\(([A-Za-z])\)|\b([A-Z]))\s*(?i:is\s+(?:the\s+)?correct)")
_LEADING_LETTER = re.compile(r"^\s*\**\(?([A-Z])[.):]\**(?:\s|$)", re.MULTILINE)


def _letter_of(text: str) -> str | None:
    """A lone option letter written as ``C``, ``(C)``, ``C.``, ``\\text{C}`` or ``**C**``."""
    cleaned = re.sub(r"\\text\{([^{}]*)\}", r"\1", text).strip().strip("*").strip()
    match = re.fullmatch(r"\(?([A-Za-z])[).]?", cleaned)
    return match.group(1).upper() if match else None


def extract_choice_letter(response: str, valid_letters: list[str]) -> str | None:
    """The option letter the response commits to, or None if it names none clearly."""
    text = strip_think(response or "")
    valid = set(valid_letters)
    boxed = last_boxed_content(text)
    if boxed is not None and (letter := _letter_of(boxed)) in valid:
        return letter
    for pattern in (_STATED, _CORRECT_LETTER):
        found = [(m.group(1) or m.group(2)).upper() for m in pattern.finditer(text)]
        found = [letter for letter in found if letter in valid]
        if found:
            return found[-1]
    leading = [m.group(1) for m in _LEADING_LETTER.finditer(text) if m.group(1) in valid]
    if leading:
        return leading[-1]
    if (letter := _letter_of(text.rstrip(". \n"))) in valid:
        return letter
    return None


def _normalize_option(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", str(text).lower()).split())


def _choices(metadata: dict) -> list[str]:
    choices = metadata.get("choices")
    if isinstance(choices, dict):
        return [str(v) for v in choices.values()]
    return [str(v) for v in choices] if choices else []


def _correct_letter(label: Any, metadata: dict, letters: list[str], choices: list[str]) -> str | None:
    if isinstance(metadata.get("correct_letter"), str):
        return metadata["correct_letter"].strip().upper()
    if isinstance(label, bool):
        return None
    if isinstance(label, int) and 0 <= label < len(letters):
        return letters[label]
    if isinstance(label, str):
        if (letter := _letter_of(label)) in letters:
            return letter
        wanted = _normalize_option(label)
        for index, choice in enumerate(choices):
            if _normalize_option(choice) == wanted and index < len(letters):
                return letters[index]
    return None


def _mentioned_options(text: str, options: list[str]) -> set[int]:
    """Indices of the options whose text the response contains, longest options first.

    A mention of "carbon dioxide" is blanked out before looking for "carbon", so one option
    that contains another does not count as naming both.
    """
    mentioned = set()
    for index in sorted(range(len(options)), key=lambda i: -len(options[i])):
        if not options[index]:
            continue
        pattern = re.compile(rf"(?<![a-z0-9]){re.escape(options[index])}(?![a-z0-9])")
        text, count = pattern.subn(" | ", text)
        if count:
            mentioned.add(index)
    return mentioned


def gpqa_reward(response: str, label: Any, metadata: dict | None = None) -> float:
    """1.0 if the response picks the correct option, else 0.0.

    ``metadata`` may carry ``choices`` (list or dict of option texts), ``valid_letters`` and
    ``correct_letter``. Without a clear letter, a response that repeats the correct option's text
    and no other option's text counts as choosing it.
    """
    metadata = metadata or {}
    choices = _choices(metadata)
    if metadata.get("valid_letters"):
        letters = [str(x).upper() for x in metadata["valid_letters"]]
    elif choices:
        letters = list(string.ascii_uppercase[: len(choices)])
    else:
        letters = _DEFAULT_LETTERS
    correct = _correct_letter(label, metadata, letters, choices)
    chosen = extract_choice_letter(response, letters)
    if chosen is not None and correct is not None:
        return 1.0 if chosen == correct else 0.0
    if correct is None or not choices or correct not in letters:
        return 0.0
    text = _normalize_option(strip_think(response or ""))
    options = [_normalize_option(c) for c in choices[: len(letters)]]
    return 1.0 if _mentioned_options(text, options) == {letters.index(correct)} else 0.0
