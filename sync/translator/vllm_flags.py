"""``--vllm-*`` flags in launch scripts must exist: in vLLM's own ``vllm serve`` parser, or as one
of vime's own engine flags (``--vllm-router-port`` ...) defined in the worktree's Python code."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

from sync.model.gate import FilePRs, GateFailure
from sync.rules import RuleSet
from sync.textio import read_text
from sync.translator.compiled import compiled
from sync.translator.flag_report import judge_flag, sglang_flags
from sync.vllm_serve import (  # re-exported: the gate's callers import them from here
    VllmNotInstalled,
    build_vllm_server_options,
    installed_vllm,
    vllm_server_options,
)

_installed_vllm = installed_vllm  # the name other stages import
__all__ = [
    "VllmNotInstalled",
    "build_vllm_server_options",
    "check_vllm_flags",
    "installed_vime_flags",
    "own_vllm_flags",
    "script_flags",
    "vllm_server_options",
]

_FLAG = re.compile(r"(?<![\w-])--vllm-([a-z0-9][a-z0-9-]*)")
_COMMENT = re.compile(r"(^|\s)#.*$")
_DEFINITION_KEYWORDS = {"type", "default", "help", "action", "dest", "choices", "nargs", "const", "required"}


def own_vllm_flags(trees: dict[str, ast.Module]) -> set[str]:
    """``--vllm-*`` flags that vime defines itself: string arguments of argument definitions."""
    flags = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not {k.arg for k in node.keywords} & _DEFINITION_KEYWORDS:
                continue
            for arg in node.args:
                if (
                    isinstance(arg, ast.Constant)
                    and isinstance(arg.value, str)
                    and _FLAG.fullmatch(arg.value)
                ):
                    flags.add(arg.value)
    return flags


def installed_vime_flags(root: Path) -> set[str]:
    """vime's own ``--vllm-*`` flags as defined by the installation at ``root`` (for a worktree
    that carries plugins but not the framework)."""
    trees = {}
    for path in sorted((root / "vime").rglob("*.py")):
        try:
            trees[path.as_posix()] = ast.parse(path.read_bytes())
        except SyntaxError:
            continue
    return own_vllm_flags(trees)


def script_flags(text: str) -> list[tuple[str, int]]:
    """``(flag, line)`` for every ``--vllm-*`` token in a shell script (comments skipped)."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        code = _COMMENT.sub("", line)
        found += [(f"--vllm-{m.group(1)}", number) for m in _FLAG.finditer(code)]
    return found


def sglang_flag_failures(
    rel: str, text: str, rules: RuleSet, file_prs: FilePRs, where: str = "passes"
) -> list[GateFailure]:
    """A ``--sglang-*`` flag in a launch script: vime accepts none, so the script cannot start.
    The message says why the translation left it (the rule's note) or what vime spells it."""
    code = "\n".join(_COMMENT.sub("", line) for line in text.split("\n"))
    return _flag_failures(rel, sglang_flags(code), rules, file_prs, where)


def _flag_failures(
    rel: str, found: list[tuple[int, str, str]], rules: RuleSet, file_prs: FilePRs, where: str
) -> list[GateFailure]:
    rules_c = compiled(rules)
    failures = []
    for line, flag, after in found:
        new, rule_id = judge_flag(rules_c, flag, after)
        if new is not None:
            why = f"vime spells it {new} (rule {rule_id}); translate the script again or rename it"
        elif rule_id is not None:
            why = f"the translation left it (rule {rule_id}: {rules.rule(rule_id).note})"
        else:
            why = "no rule maps it; map it in translations/strings.toml or drop it"
        failures.append(
            GateFailure.about(
                "vllm-flag",
                f"{rel}:{line} {where} {flag}, which vime does not accept: {why}",
                [rel],
                file_prs,
                line=line,
            )
        )
    return failures


def python_argument_flags(tree: ast.Module) -> list[tuple[int, str, str]]:
    """``(line, flag, rest)`` for every ``--sglang-*`` flag in a Python argument list: a string that
    is a command line (``"--x 1 --y 2 "``) or one element of one (``["--x", "1"]``); the names an
    argument definition gives (``add_argument("--sglang-x")``) define a flag and are not counted."""
    defined = {
        id(arg)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and {k.arg for k in node.keywords} & _DEFINITION_KEYWORDS
        for arg in node.args
    }
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.lstrip().startswith("--")
            and id(node) not in defined
        ):
            found += [
                (node.lineno + number - 1, flag, rest) for number, flag, rest in sglang_flags(node.value)
            ]
    return found


def check_python_argument_flags(
    trees: dict[str, ast.Module], rules: RuleSet, file_prs: FilePRs
) -> list[GateFailure]:
    """``--sglang-*`` flags in Python argument lists of the files the window brought (``file_prs``):
    a test or launcher that builds a command line vime would refuse."""
    failures = []
    for rel in sorted(set(trees) & set(file_prs)):
        failures += _flag_failures(
            rel, python_argument_flags(trees[rel]), rules, file_prs, "builds a command line with"
        )
    return failures


def check_vllm_flags(
    worktree: Path,
    scripts: Iterable[str],
    own_flags: set[str],
    file_prs: FilePRs,
    server_options: frozenset[str],
    rules: RuleSet,
) -> list[GateFailure]:
    """``--vllm-*`` flags neither vLLM nor vime has, and ``--sglang-*`` flags (``rules``: the
    worktree's tables, which say why each was left), in launch scripts."""
    failures = []
    for rel in scripts:
        text = read_text(worktree / rel)
        if text is None:
            continue
        failures += sglang_flag_failures(rel, text, rules, file_prs)
        for flag, line in script_flags(text):
            name = flag[len("--vllm-") :]
            if flag in own_flags or f"--{name}" in server_options:
                continue
            failures.append(
                GateFailure.about(
                    "vllm-flag",
                    f"{rel}:{line} passes {flag}, but the installed vLLM has no --{name} "
                    f"and vime defines no {flag}; map it in translations/ or drop it",
                    [rel],
                    file_prs,
                    line=line,
                )
            )
    return failures
