"""Properties of the math grader over generated answers (hypothesis), beyond the fixed table."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from vime.rollout.rm_hub.math_compare import math_answers_equal
from vime.rollout.rm_hub.math_extract import last_boxed_content

numerators = st.integers(min_value=-999, max_value=999)
denominators = st.integers(min_value=1, max_value=999)


@settings(max_examples=150, deadline=None)
@given(numerators, denominators)
def test_every_fraction_spelling_is_equal(p: int, q: int) -> None:
    assert math_answers_equal(rf"\dfrac{{{p}}}{{{q}}}", f"{p}/{q}")
    assert math_answers_equal(rf"\frac{{{p}}}{{{q}}}", str(Fraction(p, q)))


@settings(max_examples=150, deadline=None)
@given(numerators, st.sampled_from([1, 2, 4, 5, 8, 10, 16, 20, 25, 40, 125]))
def test_terminating_fractions_equal_their_decimals(p: int, q: int) -> None:
    decimal = format(Decimal(p) / Decimal(q), "f")
    assert math_answers_equal(rf"\frac{{{p}}}{{{q}}}", decimal)
    assert math_answers_equal(decimal + ".", rf"\tfrac{{{p}}}{{{q}}}")


@settings(max_examples=150, deadline=None)
@given(numerators, denominators, st.integers(min_value=1, max_value=50))
def test_different_values_never_match(p: int, q: int, shift: int) -> None:
    assert not math_answers_equal(rf"\frac{{{p}}}{{{q}}}", rf"\frac{{{p + shift}}}{{{q}}}")
    if p != 0:
        assert not math_answers_equal(str(p), str(-p))


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=1000, max_value=10**12))
def test_thousands_separators(n: int) -> None:
    assert math_answers_equal(f"{n:,}", str(n))
    assert math_answers_equal(f"{n:,}".replace(",", "{,}"), str(n))
    assert not math_answers_equal(f"{n:,}", str(n + 1))


def balanced(depth: int = 3) -> st.SearchStrategy[str]:
    text = st.text(alphabet="abcxyz0123456789+-=^_ ()[]", max_size=6)
    if depth == 0:
        return text
    inner = balanced(depth - 1)
    return st.lists(st.one_of(text, inner.map(lambda s: "{" + s + "}")), max_size=4).map("".join)


@settings(max_examples=200, deadline=None)
@given(balanced(), st.text(alphabet="abc 12.,{", max_size=10), st.text(alphabet="abc 12.,}", max_size=10))
def test_boxed_extraction_recovers_any_balanced_content(content: str, before: str, after: str) -> None:
    assert last_boxed_content(before + r"\boxed{" + content + "}" + after) == content.strip()
