"""The non-math rule-based rewards: deepscaler, dapo, f1 and gpqa-style choice matching."""

from __future__ import annotations

import pytest

from vime.rollout.rm_hub.dapo import dapo_reward, extract_dapo_answer
from vime.rollout.rm_hub.deepscaler import deepscaler_reward
from vime.rollout.rm_hub.f1 import f1_components, f1_reward, normalize_qa_text
from vime.rollout.rm_hub.gpqa import extract_choice_letter, gpqa_reward

# ----- deepscaler ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "label", "reward"),
    [
        (r"<think>2+2=4</think>The answer is \boxed{4}.", "4", 1),
        (r"<think>hmm</think>\boxed{\dfrac{1}{2}}", "0.5", 1),
        (r"<think>hmm</think>\boxed{5}", r"\boxed{5}", 1),
        (r"<think>hmm</think>\boxed{5}", "6", 0),
        (r"<think>the answer is \boxed{4}", "4", 0),  # reasoning never closed: no final answer
        (r"<think>\boxed{4}</think> so four", "4", 0),  # boxed only inside the reasoning
        (r"###Response \boxed{12}", "12", 1),
        (r"\boxed{4}", "4", 0),  # no reasoning marker at all
    ],
)
def test_deepscaler(response: str, label: str, reward: int) -> None:
    assert deepscaler_reward(response, label) == reward


# ----- dapo ---------------------------------------------------------------------------------


def test_dapo_scores_the_last_answer_line_plus_minus_one() -> None:
    response = "Let me think.\nAnswer: 12\nWait, recheck.\nAnswer: 14"
    assert extract_dapo_answer(response) == "14"
    assert dapo_reward(response, "14") == {"score": 1.0, "acc": True, "pred": "14"}
    assert dapo_reward(response, "12")["score"] == -1.0
    assert dapo_reward("no answer line", "3") == {"score": -1.0, "acc": False, "pred": ""}


@pytest.mark.parametrize(
    ("response", "label"),
    [
        ("answer: **1,000**", "1000"),
        (r"Answer: $\frac{3}{4}$", "0.75"),
        ("<think>Answer: 1</think>Answer: 2", "2"),
    ],
)
def test_dapo_normalizes_the_extracted_answer(response: str, label: str) -> None:
    assert dapo_reward(response, label)["acc"]


# ----- f1 -----------------------------------------------------------------------------------


def test_f1_is_token_overlap_after_normalization() -> None:
    assert normalize_qa_text("The  Eiffel Tower!") == "eiffel tower"
    assert f1_reward("the Eiffel Tower.", "Eiffel tower") == pytest.approx(1.0)
    f1, precision, recall = f1_components("Paris France", "Paris")
    assert (precision, recall) == (0.5, 1.0)
    assert f1 == pytest.approx(2 / 3)
    assert f1_reward("London", "Paris") == 0.0
    assert f1_reward(None, "Paris") == 0.0


def test_f1_yes_no_must_match_exactly_and_lists_take_the_best() -> None:
    assert f1_reward("yes", "no") == 0.0
    assert f1_reward("no it is not", "no") == 0.0
    assert f1_reward("New York City", ["NYC", "New York City"]) == pytest.approx(1.0)
    assert f1_reward("<think>maybe Rome</think>Paris", "Paris") == pytest.approx(1.0)


# ----- gpqa ---------------------------------------------------------------------------------

LETTERS = list("ABCD")


@pytest.mark.parametrize(
    ("response", "letter"),
    [
        ("The answer is (C)", "C"),
        ("The answer is C.", "C"),
        ("Answer: C", "C"),
        ("**Answer:** **B**", "B"),
        ("the correct option is d", None),  # a lowercase letter outside parentheses is a word
        ("The correct answer is (d).", "D"),
        (r"Therefore \boxed{C}", "C"),
        (r"\boxed{\text{(A)}}", "A"),
        ("C. 42 joules", "C"),
        ("Reasoning...\nB) because of the field", "B"),
        ("B is correct.", "B"),
        ("<think>The answer is A? no</think>The answer is D", "D"),
        ("D", "D"),
        ("I think the answer is a fraction", None),
        ("The answer is E", None),  # not a valid letter for four options
    ],
)
def test_extract_choice_letter(response: str, letter: str | None) -> None:
    assert extract_choice_letter(response, LETTERS) == letter


def test_gpqa_label_forms() -> None:
    metadata = {"choices": ["carbon", "carbon dioxide", "oxygen", "nitrogen"]}
    assert gpqa_reward("The answer is (B)", "B", metadata) == 1.0
    assert gpqa_reward("The answer is (B)", "(B)", metadata) == 1.0
    assert gpqa_reward("The answer is (B)", 1, metadata) == 1.0  # index label
    assert gpqa_reward("The answer is (B)", "carbon dioxide", metadata) == 1.0  # option-text label
    assert gpqa_reward("The answer is (A)", "carbon dioxide", metadata) == 0.0
    assert gpqa_reward("Answer: B", "X", {"choices": ["p", "q"], "correct_letter": "b"}) == 1.0


def test_gpqa_option_text_without_a_letter() -> None:
    metadata = {"choices": ["carbon", "carbon dioxide", "oxygen", "nitrogen"]}
    assert gpqa_reward("It forms carbon dioxide when burned", "B", metadata) == 1.0
    assert gpqa_reward("It forms carbon", "A", metadata) == 1.0
    assert gpqa_reward("It forms carbon dioxide", "A", metadata) == 0.0  # the longer option is not "carbon"
    assert gpqa_reward("either oxygen or nitrogen", "C", metadata) == 0.0  # hedging names two options
    assert gpqa_reward("no idea", "C", metadata) == 0.0


def test_gpqa_valid_letters_from_metadata() -> None:
    assert gpqa_reward("The answer is (F)", "F", {"valid_letters": list("ABCDEF")}) == 1.0
    assert gpqa_reward("The answer is (F)", "F", {"choices": ["1", "2", "3"]}) == 0.0
