"""The math reward on real answer pairs: boxed extraction, LaTeX normalization, equality.

The pairs are the shapes models and datasets (MATH, GSM8K, AIME) actually produce, both
pairs that must match and near-misses that must not.
"""

from __future__ import annotations

import pytest

from vime.rollout.rm_hub.math_compare import HAVE_SYMPY, math_answers_equal, parse_number
from vime.rollout.rm_hub.math_extract import last_boxed_content
from vime.rollout.rm_hub.math_normalize import normalize_math_answer
from vime.rollout.rm_hub.math_utils import grade_math_answer, reference_answers

EQUAL = [
    # fractions in every spelling
    (r"\frac{1}{2}", "1/2"),
    (r"\dfrac{1}{2}", "0.5"),
    (r"\tfrac12", r"\frac{1}{2}"),
    (r"\frac{3}{4}", "0.75"),
    (r"-\dfrac{3}{4}", "-0.75"),
    (".5", "1/2"),
    ("0.50", r"\frac12"),
    (r"\frac{\sqrt{3}}{2}", r"\frac{\sqrt3}{2}"),
    (r"\frac{\pi}{2}", r"\pi/2"),
    # spacing and sizing commands
    (r"\left( 1, 2 \right)", "(1,2)"),
    (r"\left[-1,3\right)", "[-1, 3)"),
    (r"3\,000", "3000"),
    (r"\displaystyle \frac{1}{3}", "1/3"),
    (r"x \in \left(-\infty, 2\right)", r"x \in (-\infty,2)"),
    # units, degrees, percentages, trailing periods, thousands separators
    (r"10\text{ cm}", "10"),
    (r"5 \text{ inches}", "5"),
    (r"12\mbox{ dollars}", "12"),
    ("12 apples", "12"),
    (r"90^\circ", "90"),
    (r"90^{\circ}", "90"),
    ("45°", "45"),
    (r"50\%", "50"),
    (r"50\%", "0.5"),
    (r"6\%", "0.06"),
    ("7.", "7"),
    ("1,000", "1000"),
    ("1{,}000{,}000", "1000000"),
    ("12,345.5", "12345.5"),
    # negatives
    ("-5", "−5"),
    ("- 5", "-5"),
    (r"-\frac{1}{2}", "-0.5"),
    # assignments and choice letters
    ("x = 5", "5"),
    (r"k=\frac{2}{3}", r"\dfrac{2}{3}"),
    (r"\text{(C)}", "C"),
    ("(B)", r"\textbf{B}"),
    # intervals, tuples, sets, lists of roots
    ("(1,2]", r"\left(1, 2\right]"),
    (r"(-\infty, 2)", r"(-\infty,2)"),
    (r"[\frac{1}{2}, 3]", "[0.5, 3]"),
    (r"\{1, 2\}", r"\{2,1\}"),
    ("1, 2", "2, 1"),
    (r"2 \text{ and } 3", "2, 3"),
    ("-1 or 4", "4, -1"),
    ("(3, -4)", r"\left(3,-4\right)"),
    # algebra (needs sympy)
    (r"2\sqrt{2}", r"\sqrt{8}"),
    ("x^2+2x+1", "(x+1)^2"),
    (r"10^{10}", "10000000000"),
    (r"\sqrt[3]{27}", "3"),
    (r"\sqrt{5+2\sqrt{6}}", r"\sqrt{2}+\sqrt{3}"),  # a nested radical
    ("2(x+1)", "2x+2"),
    ("sin(x)^2+cos(x)^2", "1"),
    (r"\frac{1}{x+1}+\frac{1}{x-1}", r"\frac{2x}{x^2-1}"),
    # words
    ("Yes", "yes"),
]

NOT_EQUAL = [
    ("3", "4"),
    (r"\frac{1}{3}", "0.33"),
    ("(1,2]", "(1,2)"),
    ("[1,2]", "(1,2)"),
    ("(3, -4)", "(-4, 3)"),
    ("2x", "2"),
    (r"\pi", "3.14159"),
    ("-5", "5"),
    (r"\sqrt{2}", "2"),
    ("1, 2", "1, 2, 3"),
    ("12", "1,2"),
    ("999999", "1000000"),
    (r"2 \text{ and } 3", "23"),
    ("2^{100}", "2^{100}+1"),  # values compare exactly: no relative tolerance
    (r"\frac{1}{3}", "0.333333"),
    ("no", "yes"),
    ("", "0"),
    ("x^2", "x^3"),
    ("__import__('os').system('true')", "0"),
    ("9^{9^{9}}", "1"),  # refused before sympy tries to evaluate it
    ("ab", "ba"),  # a multi-letter name is never handed to sympy
]


@pytest.mark.parametrize(("given", "truth"), EQUAL)
def test_equal_pairs_match_both_ways(given: str, truth: str) -> None:
    if not HAVE_SYMPY and any(s in given + truth for s in ("sqrt", "^", "(x", "x-1")):
        pytest.skip("needs sympy")
    assert math_answers_equal(given, truth)
    assert math_answers_equal(truth, given)


@pytest.mark.parametrize(("given", "truth"), NOT_EQUAL)
def test_different_answers_do_not_match(given: str, truth: str) -> None:
    assert not math_answers_equal(given, truth)
    assert not math_answers_equal(truth, given)


@pytest.mark.parametrize(
    ("text", "content"),
    [
        (r"The answer is \boxed{7}.", "7"),
        (r"\boxed{\frac{1}{2}}", r"\frac{1}{2}"),
        (r"first \boxed{1} then \boxed{\left(2, \{3\}\right)}", r"\left(2, \{3\}\right)"),
        (r"nested \boxed{\text{a {b} c}} end", r"\text{a {b} c}"),
        (r"\fbox{42}", "42"),
        (r"\boxed{1} and finally \fbox{2}", "2"),
        (r"so $\boxed 5$ it is", "5"),
        (r"\boxed {  9 }", "9"),
        (r"escaped \boxed{\{1\}} brace", r"\{1\}"),
    ],
)
def test_last_boxed_content(text: str, content: str) -> None:
    assert last_boxed_content(text) == content


@pytest.mark.parametrize("text", ["no box here", r"\boxed{unclosed", r"\boxedanswer{3}", "", None])
def test_no_boxed_answer(text: str | None) -> None:
    assert last_boxed_content(text) is None


def test_unclosed_last_box_falls_back_to_previous_complete_one() -> None:
    assert last_boxed_content(r"\boxed{3} and \boxed{4") == "3"


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        (r"\dfrac{1}{2}", "1/2"),
        (r"\frac{a+b}{2}", "(a+b)/2"),
        (r"10\text{ cm}", "10"),
        (r"\left( 1, 2 \right)", "(1,2)"),
        ("7.", "7"),
        ("1,000", "1000"),
        (r"\$5", "5"),
        (r"$x = \frac12$", "1/2"),
    ],
)
def test_normalized_forms(raw: str, normalized: str) -> None:
    assert normalize_math_answer(raw) == normalized


def test_parse_number_exact_values() -> None:
    assert parse_number("3/4") == parse_number("0.75")
    assert parse_number("1e3") == 1000
    assert parse_number("1/0") is None
    assert parse_number("x") is None


def test_grade_uses_last_box_and_any_reference() -> None:
    response = r"Maybe \boxed{3}? No: 2+2 is \boxed{4}."
    assert grade_math_answer(response, "4")
    assert not grade_math_answer(response, "3")
    assert grade_math_answer(response, ["five", "4"])
    assert grade_math_answer(r"\boxed{4}", r"\boxed{4}")  # a boxed reference counts by its content
    assert not grade_math_answer("4", "4")  # no box: the prompt asked for one
    assert reference_answers([None, "", r"\boxed{2}"]) == ["2"]


def test_reasoning_model_answer_after_think() -> None:
    response = r"<think>perhaps \boxed{5}... no</think> The sum is \boxed{6}"
    assert grade_math_answer(response, "6")
    assert not grade_math_answer(response, "5")
