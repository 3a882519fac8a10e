"""Run hook contract files against your own plugin (console script ``vime-contract``).

    vime-contract tests/contract/test_reward_contract.py --custom-rm-path my_pkg.rm.score [-x -q ...]
    vime-contract tests/contract/test_a_contract.py tests/contract/test_b_contract.py   # several at once
    python tools/run_contract.py ...                                                   # the same, from a checkout

Every ``--xxx-path dotted.path`` becomes the environment variable ``VIME_CONTRACT_XXX_PATH``
(what the contract file reads instead of vime's default hook); every other argument goes to
pytest unchanged, except ``--args JSON`` (flags the plugin's launch sets, for every hook),
``--prompt JSON`` / ``--label JSON`` (the shape of the plugin's data) and ``--reward-key K`` /
``--group-rm`` (how its reward is read). Each path is imported first, so a typo is one line naming the module and the
attribute rather than a pytest traceback. The current directory is put on ``sys.path`` (as
``python -m`` does), so a plugin next to you imports as it would in a training run.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ENV_PREFIX = "VIME_CONTRACT_"
_PATH_FLAG = re.compile(r"^--(?P<name>[a-z][a-z0-9-]*-path)(?:=(?P<value>.*))?$")
# the directory holding this installation's vime (the checkout, or site-packages for a wheel): it goes
# last on the path so the contracts and their fixtures import even when the caller's path lacks them
_REPO_ROOT = Path(__file__).resolve().parents[1]
# contract options that are not hook paths: how the plugin under test is meant to be called
VALUE_OPTIONS = {
    "--reward-key": "VIME_CONTRACT_REWARD_KEY",  # dict rewards: the key training reads
    "--args": "VIME_CONTRACT_ARGS",  # JSON object: the flags the plugin's launch sets, for every hook
    "--prompt": "VIME_CONTRACT_PROMPT",  # JSON: the prompt shape of the plugin's data (text or messages)
    "--label": "VIME_CONTRACT_LABEL",  # JSON: the label shape of the plugin's data
}
JSON_OPTIONS = {"--args": dict, "--prompt": (str, list), "--label": (str, dict, list, int, float)}
SWITCH_OPTIONS = {"--group-rm": "VIME_CONTRACT_GROUP_RM"}  # the reward plugin scores a whole group


class ContractUsageError(Exception):
    """Bad command line: the message is one line and names the fix."""


@dataclass
class ContractInvocation:
    """A parsed command line: the contract files, the hook paths, what pytest gets."""

    files: list[Path]
    hook_paths: dict[str, str] = field(default_factory=dict)  # flag name ("custom-rm-path") -> dotted path
    options: dict[str, str] = field(default_factory=dict)  # env var -> value, from VALUE/SWITCH_OPTIONS
    pytest_args: list[str] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return {**{env_var_for(flag): value for flag, value in self.hook_paths.items()}, **self.options}


def env_var_for(flag: str) -> str:
    """``custom-rm-path`` (or ``--custom-rm-path``) -> ``VIME_CONTRACT_CUSTOM_RM_PATH``."""
    return ENV_PREFIX + flag.lstrip("-").upper().replace("-", "_")


def parse_argv(argv: list[str]) -> ContractInvocation:
    """Split ``FILE [FILE ...] [--xxx-path P ...] [pytest args]``; raise ``ContractUsageError`` on misuse."""
    if not argv or argv[0].startswith("-"):
        raise ContractUsageError("usage: run_contract.py FILE [--xxx-path dotted.path ...] [pytest args]")
    count = next(
        (i for i, arg in enumerate(argv) if arg.startswith("-") or not arg.endswith(".py")), len(argv)
    )
    files = [Path(arg) for arg in argv[: max(count, 1)]]
    for file in files:
        if not file.is_file():
            raise ContractUsageError(
                f"contract file {str(file)!r} not found; pass a file under tests/contract/"
            )
    invocation = ContractInvocation(files=files)
    rest = iter(argv[len(files) :])
    for arg in rest:
        name, _, inline = arg.partition("=")
        if name in SWITCH_OPTIONS:
            invocation.options[SWITCH_OPTIONS[name]] = "1"
            continue
        if name in VALUE_OPTIONS:
            value = inline or next(rest, None)
            if not value or (value.startswith("-") and name not in JSON_OPTIONS):
                raise ContractUsageError(f"{name} needs a value")
            if name in JSON_OPTIONS:
                _check_json(name, value)
            invocation.options[VALUE_OPTIONS[name]] = value
            continue
        match = _PATH_FLAG.match(arg)
        if match is None:
            invocation.pytest_args.append(arg)
            continue
        value = match.group("value")
        if value is None:
            value = next(rest, None)
            if value is None or value.startswith("-"):
                raise ContractUsageError(
                    f"--{match.group('name')} needs a value: a dotted path like my_pkg.module.fn"
                )
        invocation.hook_paths[match.group("name")] = value
    return invocation


def _check_json(name: str, value: str) -> None:
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise ContractUsageError(
            f"{name} takes JSON ({exc.args[0]}); e.g. {name} '{_EXAMPLES[name]}'"
        ) from None
    if not isinstance(parsed, JSON_OPTIONS[name]):
        raise ContractUsageError(f"{name} takes JSON like '{_EXAMPLES[name]}', got {type(parsed).__name__}")


_EXAMPLES = {
    "--args": '{"rollout_max_context_len": 1024}',
    "--prompt": '[{"role": "user", "content": "What is 1+1?"}]',
    "--label": '{"ground_truth": "2"}',
}


def check_file_takes(invocation: ContractInvocation) -> None:
    """Refuse a ``--xxx-path`` that no contract file reads (it would be silently ignored)."""
    text = "\n".join(file.read_text(encoding="utf-8") for file in invocation.files)
    taken = sorted(set(re.findall(r'"([a-z][a-z0-9-]*-path)"', text)))
    names = ", ".join(file.name for file in invocation.files)
    for flag in invocation.hook_paths:
        if f'"{flag}"' not in text and env_var_for(flag) not in text:
            hint = ", ".join(f"--{name}" for name in taken) or "no path arguments"
            raise ContractUsageError(f"{names} does not take --{flag} (it takes {hint})")


def check_paths_import(invocation: ContractInvocation) -> None:
    """Import every hook path now, so a bad one is one clear line instead of a failing test."""
    from vime.utils.misc import HookLoadError, load_function

    for flag, dotted in invocation.hook_paths.items():
        try:
            load_function(dotted)
        except HookLoadError as exc:
            raise ContractUsageError(f"--{flag}: {exc}") from None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    cwd = os.getcwd()
    # cwd first (the plugin author's code), this checkout last: a PYTHONPATH that names another
    # checkout (the gate's worktree) must win over the installation this runner comes from.
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    if str(_REPO_ROOT) not in sys.path:
        sys.path.append(str(_REPO_ROOT))
    try:
        invocation = parse_argv(argv)
        check_file_takes(invocation)
        check_paths_import(invocation)
    except ContractUsageError as exc:
        print(f"run_contract: error: {exc}", file=sys.stderr)
        return 2
    os.environ.update(invocation.env)
    # pytest's own imports of the contract file must see the same modules the check above saw
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [cwd, os.environ.get("PYTHONPATH"), str(_REPO_ROOT)])
    )
    import pytest

    traceback_style = [] if any(a.startswith("--tb") for a in invocation.pytest_args) else ["--tb=short"]
    # no cache dir in the plugin author's tree; hypothesis's plugin costs ~2 s and no contract uses it
    quiet_plugins = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]
    args = [*map(str, invocation.files), *quiet_plugins, *traceback_style, *invocation.pytest_args]
    return int(pytest.main(args))


def cli() -> None:
    """Entry point of the ``vime-contract`` console script."""
    sys.exit(main())


if __name__ == "__main__":
    cli()
