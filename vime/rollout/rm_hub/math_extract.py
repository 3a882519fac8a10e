"""Find the final answer a model wrote: the last ``\\boxed{...}`` / ``\\fbox{...}`` in the text.

Brace matching is done by hand because answers nest braces (``\\boxed{\\frac{1}{2}}``), which a
regular expression cannot balance.
"""

from __future__ import annotations

_BOX_COMMANDS = ("\\boxed", "\\fbox")


def _matching_brace(text: str, open_index: int) -> int | None:
    """Index of the ``}`` closing the ``{`` at ``open_index``; None when the text ends first."""
    depth = 0
    index = open_index
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in "{}":
            index += 2  # an escaped brace (\{ or \}) is content, not structure
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return None


def _box_content_at(text: str, start: int, command: str) -> str | None:
    """Content of the box command that starts at ``start``, or None if it is malformed."""
    after = start + len(command)
    if after < len(text) and text[after].isalpha():
        return None  # a longer command such as \boxedanswer, not a box
    rest = text[after:]
    stripped = rest.lstrip()
    if stripped.startswith("{"):
        open_index = len(text) - len(stripped)
        close_index = _matching_brace(text, open_index)
        if close_index is None:
            return None
        return text[open_index + 1 : close_index]
    if rest.startswith(" ") and stripped:
        # "\boxed 5" form: the answer runs to the next whitespace or '$'.
        token = stripped.split()[0]
        return token.split("$")[0] or None
    return None


def last_boxed_content(text: str | None) -> str | None:
    """The content of the last well-formed ``\\boxed{}`` or ``\\fbox{}`` in ``text``.

    >>> last_boxed_content(r"so \\boxed{\\frac{1}{2}}.")
    '\\\\frac{1}{2}'
    """
    if not text:
        return None
    candidates = []
    for command in _BOX_COMMANDS:
        position = text.find(command)
        while position != -1:
            candidates.append((position, command))
            position = text.find(command, position + 1)
    for position, command in sorted(candidates, reverse=True):
        content = _box_content_at(text, position, command)
        if content is not None:
            return content.strip()
    return None


def strip_think(text: str) -> str:
    """The part of a response after its reasoning block (``</think>``), or all of it."""
    if "</think>" in text:
        return text.rsplit("</think>", 1)[1]
    return text
