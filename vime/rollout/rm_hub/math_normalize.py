"""Bring a math answer written in LaTeX or plain text to one canonical string.

Two answers that mean the same thing should normalize to the same text whenever that is
possible without algebra: ``\\dfrac{1}{2}``, ``\\frac12`` and ``1/2`` all become ``1/2``;
``10\\text{ cm}`` and ``10`` both become ``10``; ``50\\%`` becomes ``50`` (the percent sign is
remembered by :func:`has_percent` so that ``0.5`` can still be matched by value).
Equivalences that need algebra (``0.5`` vs ``1/2``, ``\\sqrt{8}`` vs ``2\\sqrt{2}``) are left to
:mod:`vime.rollout.rm_hub.math_compare`.
"""

from __future__ import annotations

import re

from .math_extract import _matching_brace, last_boxed_content

_UNICODE = {"−": "-", "–": "-", "∞": "\\infty", "π": "\\pi", "°": "^\\circ", "×": "\\times", "÷": "\\div"}
_SPACING = ("\\displaystyle", "\\qquad", "\\quad", "\\!", "\\,", "\\:", "\\;", "\\>", "\\ ", "~")
_TEXT_COMMANDS = (
    "\\text",
    "\\textbf",
    "\\textit",
    "\\textrm",
    "\\mathrm",
    "\\mathbf",
    "\\mbox",
    "\\operatorname",
)
_DEGREES = ("^{\\circ}", "^\\circ", "\\circ", "\\degree", "^{o}")
_PERCENT = ("\\%", "%", "\\text{percent}", "percent")
_SIMPLE = re.compile(r"-?(?:\d+\.?\d*|\.\d+|[A-Za-z]|\\[A-Za-z]+)")
_UNIT_WORDS = re.compile(r"^(?P<value>.*?[\d}.)])\s+(?:[A-Za-z]{2,}\.?(?:\^\d)?\s*)+$")
_ASSIGNMENT = re.compile(r"^\s*(?:[A-Za-z](?:_\{?\w+\}?)?|\\[A-Za-z]+)\s*=(?!=)")
_THOUSANDS = re.compile(r"^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")


def has_percent(answer: str) -> bool:
    """Whether the answer was written as a percentage (so its value may be meant /100)."""
    return any(marker in answer for marker in ("\\%", "%", "percent"))


def _replace_command_argument(text: str, command: str, render) -> str:
    """Replace every ``command{arg}`` by ``render(arg, text_before)``, matching braces."""
    out = []
    index = 0
    while True:
        found = text.find(command + "{", index)
        if found == -1:
            out.append(text[index:])
            return "".join(out)
        close = _matching_brace(text, found + len(command))
        if close is None:
            out.append(text[index:])
            return "".join(out)
        out.append(text[index:found])
        out.append(render(text[found + len(command) + 1 : close], "".join(out)))
        index = close + 1


def _unwrap_text(text: str) -> str:
    """``\\text{...}`` and friends: drop a unit that follows a value, keep any other content."""

    def render(content: str, before: str) -> str:
        if content.strip() in ("and", "or", ","):
            return ","  # "2 \\text{ and } 3" lists two values; it is not the unit "and"
        stripped_before = before.rstrip()
        follows_value = bool(stripped_before) and stripped_before[-1] in "0123456789}.)"
        looks_like_unit = re.fullmatch(r"\s*[A-Za-z][A-Za-z .^/\d]*", content) is not None
        if follows_value and looks_like_unit:
            return ""
        return content

    for command in _TEXT_COMMANDS:
        text = _replace_command_argument(text, command, render)
    return text


def _fix_short_fractions(text: str) -> str:
    """``\\frac12`` → ``\\frac{1}{2}`` and ``\\frac1{x}`` → ``\\frac{1}{x}``; ``\\sqrt2`` → ``\\sqrt{2}``."""
    text = re.sub(r"\\frac\s*(\w)\s*(\w)", r"\\frac{\1}{\2}", text)
    text = re.sub(r"\\frac\s*(\w)\s*\{", r"\\frac{\1}{", text)
    text = re.sub(r"\\frac\s*\{([^{}]*)\}\s*(\w)", r"\\frac{\1}{\2}", text)
    return re.sub(r"\\sqrt\s*(\w)", r"\\sqrt{\1}", text)


def _fractions_to_slash(text: str) -> str:
    """``\\frac{a}{b}`` → ``a/b`` when both parts are simple, else ``(a)/(b)``; innermost first."""
    while True:
        found = text.find("\\frac{")
        if found == -1:
            return text
        numerator_end = _matching_brace(text, found + 5)
        if numerator_end is None or numerator_end + 1 >= len(text) or text[numerator_end + 1] != "{":
            return text
        denominator_end = _matching_brace(text, numerator_end + 1)
        if denominator_end is None:
            return text
        numerator = _fractions_to_slash(text[found + 6 : numerator_end])
        denominator = _fractions_to_slash(text[numerator_end + 2 : denominator_end])
        parts = [p if _SIMPLE.fullmatch(p) else f"({p})" for p in (numerator, denominator)]
        text = text[:found] + f"{parts[0]}/{parts[1]}" + text[denominator_end + 1 :]


def _strip_delimiters(text: str) -> str:
    """Remove math-mode delimiters and ``\\left``/``\\right`` sizing around brackets."""
    text = text.strip()
    for opener, closer in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if text.startswith(opener) and text.endswith(closer) and len(text) >= len(opener) + len(closer):
            text = text[len(opener) : len(text) - len(closer)].strip()
    text = text.replace("$", "")
    text = re.sub(r"\\(?:left|right|big|Big|bigg|Bigg)(?![A-Za-z])\s*\.?", "", text)
    return text


def normalize_math_answer(answer: object) -> str:
    """Canonical text of a final answer; see the module docstring for what is unified."""
    text = str(answer).strip()
    boxed = last_boxed_content(text)
    if boxed is not None:
        text = boxed
    for old, new in _UNICODE.items():
        text = text.replace(old, new)
    text = _strip_delimiters(text.replace("\\$", ""))  # \$ is a currency sign, not math mode
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    text = text.replace("\\dbinom", "\\binom").replace("\\tbinom", "\\binom")
    for spacing in _SPACING:
        text = text.replace(spacing, " ")
    text = text.replace("{,}", "")  # LaTeX thousands separator: 1{,}000
    for marker in _DEGREES + _PERCENT:
        text = text.replace(marker, "")
    text = _unwrap_text(text)
    text = re.sub(r"(?<=[\d}).])\s+(?:and|or)\s+(?=[-\d\\(\[])", ",", text).strip()
    if (match := _UNIT_WORDS.match(text)) is not None:
        text = match.group("value")
    text = _ASSIGNMENT.sub("", text, count=1) if text.count("=") == 1 else text
    text = text.strip().rstrip(".").strip()
    text = re.sub(r"\s+", "", text)
    text = text.replace("\\{", "{").replace("\\}", "}")
    if _THOUSANDS.fullmatch(text):
        text = text.replace(",", "")
    text = _fix_short_fractions(text)
    text = _fractions_to_slash(text)
    text = re.sub(r"(?<![\d.])\.(\d)", r"0.\1", text)  # .5 → 0.5
    if re.fullmatch(r"\(([A-Za-z])\)", text):  # "(C)" → "C": a choice letter
        text = text[1]
    if re.fullmatch(r"[A-Za-z]{2,}", text):
        text = text.lower()  # words: "Yes" == "yes"
    return text
