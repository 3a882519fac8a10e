"""Value types of Megatron flags that argparse has no built-in for.

Megatron evaluates layer patterns such as ``--moe-layer-freq "[0]*3+[1]*45"`` with ``eval``; here
the same small grammar (integers, lists, ``+`` and ``*``) is read from the syntax tree, so a flag
value can never run code.
"""

from __future__ import annotations

import argparse
import ast


def _pattern_value(node: ast.AST) -> int | list[int]:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.List | ast.Tuple):
        items = [_pattern_value(element) for element in node.elts]
        if not all(isinstance(item, int) for item in items):
            raise ValueError("a layer pattern list holds integers only")
        return items  # type: ignore[return-value]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
        left, right = _pattern_value(node.left), _pattern_value(node.right)
        if isinstance(node.op, ast.Add):
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            if isinstance(left, int) and isinstance(right, int):
                return left + right
        elif isinstance(left, list) and isinstance(right, int):
            return left * right
        elif isinstance(left, int) and isinstance(right, list):
            return right * left
        elif isinstance(left, int) and isinstance(right, int):
            return left * right
    raise ValueError("only integers, [lists], + and * are allowed")


def int_or_pattern(text: str) -> int | list[int]:
    """``"2"`` -> 2; ``"([1]*3+[0])*2"`` -> [1, 1, 1, 0, 1, 1, 1, 0] (Megatron's layer-pattern flags)."""
    text = text.strip()
    try:
        value = _pattern_value(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError) as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an integer or a layer pattern like '[0]*3+[1]*45' ({exc})"
        ) from None
    return value
