"""Decide whether two math answers are equal: text, then value, then element-wise, then algebra.

Algebra uses sympy when it is importable (torch brings it into every vime install); without it
the comparison stops at exact values. Model output is never handed to ``eval``-like parsing
unless it consists of digits, operators and a short list of known names only.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

from .math_normalize import has_percent, normalize_math_answer

try:  # sympy is optional: comparison degrades to values and text without it
    import sympy
    from sympy.parsing.sympy_parser import (
        convert_xor,
        implicit_multiplication_application,
        parse_expr,
        standard_transformations,
    )

    HAVE_SYMPY = True
except ImportError:  # pragma: no cover - exercised only on installs without sympy
    HAVE_SYMPY = False

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_FRACTION = re.compile(r"([-+]?\d+)/(\d+)")
_BRACKETS = {"(": ")", "[": "]", "{": "}"}
_SAFE_NAMES = {"sqrt", "pi", "oo", "log", "ln", "exp", "sin", "cos", "tan", "E", "I"}
_MAX_SYMPY_CHARS = 80


def parse_number(text: str) -> Fraction | None:
    """Exact value of an integer, decimal, scientific or ``a/b`` literal; None otherwise."""
    if _NUMBER.fullmatch(text):
        try:
            return Fraction(text)
        except (ValueError, ZeroDivisionError):
            return None
    if (match := _FRACTION.fullmatch(text)) is not None and int(match.group(2)) != 0:
        return Fraction(int(match.group(1)), int(match.group(2)))
    return None


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not nested inside brackets."""
    parts, depth, current = [], 0, []
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _as_sequence(text: str) -> tuple[str, list[str]] | None:
    """``(kind, items)`` for a tuple, interval, set or bare comma list; None for one value."""
    if len(text) >= 2 and text[0] in "([{" and text[-1] in ")]}":
        inner = text[1:-1]
        depth = 0
        for char in inner:  # "(1)+(2)" is not one bracketed sequence
            depth += 1 if char in "([{" else -1 if char in ")]}" else 0
            if depth < 0:
                break
        else:
            items = _split_top_level(inner)
            if len(items) > 1 or text[0] == "{":
                return text[0] + text[-1], items
    items = _split_top_level(text)
    return ("list", items) if len(items) > 1 else None


def _to_sympy_source(text: str) -> str | None:
    """Python-syntax source for sympy, or None when the text holds anything not allowed."""
    if len(text) > _MAX_SYMPY_CHARS or re.search(r"\^\{?\d{4,}|\^\{[^{}]*\^|\^\^", text):
        return None  # huge or stacked exponents (9^{9^{9}}) can make evaluation hang
    source = re.sub(r"\\sqrt\[(\w+)\]\{([^{}]*)\}", r"((\2)**(1/(\1)))", text)
    for latex, python in (
        ("\\sqrt", "sqrt"),
        ("\\cdot", "*"),
        ("\\times", "*"),
        ("\\div", "/"),
        ("\\pi", "pi"),
        ("\\infty", "oo"),
        ("\\ln", "log"),
        ("\\log", "log"),
        ("\\exp", "exp"),
        ("\\sin", "sin"),
        ("\\cos", "cos"),
        ("\\tan", "tan"),
    ):
        source = source.replace(latex, python)
    source = source.replace("{", "(").replace("}", ")")
    if not re.fullmatch(r"[\w+\-*/^().\s]+", source):
        return None
    for name in re.findall(r"[A-Za-z_]+", source):
        if len(name) > 1 and name not in _SAFE_NAMES:
            return None
    return source


@lru_cache(maxsize=4096)
def _sympy_expr(text: str):
    source = _to_sympy_source(text)
    if source is None:
        return None
    transformations = (*standard_transformations, implicit_multiplication_application, convert_xor)
    try:
        return parse_expr(source, transformations=transformations, evaluate=True)
    except Exception:  # sympy raises many kinds of errors on odd input
        return None


def _equal_by_algebra(given: str, truth: str) -> bool:
    if not HAVE_SYMPY:
        return False
    given_expr, truth_expr = _sympy_expr(given), _sympy_expr(truth)
    if given_expr is None or truth_expr is None:
        return False
    try:
        difference = sympy.simplify(given_expr - truth_expr)
        if difference == 0:
            return True
        if difference.is_Rational:  # exact arithmetic already decided: 2^{100}+1 is not 2^{100}
            return False
        if not difference.free_symbols:  # irrational leftovers simplify() could not cancel
            value = complex(sympy.N(difference))
            scale = max(1.0, abs(complex(sympy.N(truth_expr))))
            return abs(value) <= 1e-12 * scale
    except Exception:
        return False
    return False


def _equal_values(given_raw: str, given: str, truth_raw: str, truth: str) -> bool | None:
    """True/False when both sides are plain numbers (compared exactly, as fractions); else None."""
    given_value, truth_value = parse_number(given), parse_number(truth)
    if given_value is None or truth_value is None:
        return None
    candidates = {given_value}
    if has_percent(given_raw) and not has_percent(truth_raw):
        candidates.add(given_value / 100)
    if has_percent(truth_raw) and not has_percent(given_raw):
        candidates.add(given_value * 100)
    return truth_value in candidates  # exact: 999999 is not 1000000, and 0.33 is not 1/3


def _equal_sequences(given: str, truth: str) -> bool | None:
    given_seq, truth_seq = _as_sequence(given), _as_sequence(truth)
    if given_seq is None and truth_seq is None:
        return None
    if given_seq is None or truth_seq is None:
        return False
    (given_kind, given_items), (truth_kind, truth_items) = given_seq, truth_seq
    if given_kind != truth_kind or len(given_items) != len(truth_items):
        return False
    if given_kind in ("list", "{}"):  # sets and bare lists of roots: order does not matter
        remaining = list(truth_items)
        for item in given_items:
            match = next((t for t in remaining if normalized_equal(item, t)), None)
            if match is None:
                return False
            remaining.remove(match)
        return True
    return all(normalized_equal(g, t) for g, t in zip(given_items, truth_items, strict=True))


def normalized_equal(
    given: str, truth: str, given_raw: str | None = None, truth_raw: str | None = None
) -> bool:
    """Equality of two answers that are already normalized (raw forms only inform percentages)."""
    if given == truth:
        return True
    values = _equal_values(given_raw or given, given, truth_raw or truth, truth)
    if values is not None:
        return values
    sequences = _equal_sequences(given, truth)
    if sequences is not None:
        return sequences
    return _equal_by_algebra(given, truth)


def math_answers_equal(given: object, truth: object) -> bool:
    """Whether a model's final answer equals the reference answer.

    >>> math_answers_equal("\\\\dfrac{1}{2}", "0.5")
    True
    """
    if given is None or truth is None:
        return False
    given_raw, truth_raw = str(given), str(truth)
    given_norm, truth_norm = normalize_math_answer(given_raw), normalize_math_answer(truth_raw)
    if not given_norm or not truth_norm:
        return False
    return normalized_equal(given_norm, truth_norm, given_raw, truth_raw)
