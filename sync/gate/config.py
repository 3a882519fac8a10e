"""The downstream repository's gate configuration: ``.vime-sync/gate.toml``.

    # which contracts run, each with the hook paths of this repository's own plugins
    [[contract]]
    file = "tests/contract/test_reward_contract.py"
    args = ["--custom-rm-path", "vime_plugins.rollout.math_reward.reward_func"]
    timeout = 300            # seconds, optional

    [static]
    exclude = ["tests/contract/fixtures/broken_syntax*"]   # globs the static checks skip
    mode = "regressions"     # fail only on failures the window introduced (default: "all")

Without the file (or without any ``[[contract]]``), vime's own contracts run with no path, i.e.
against vime's default hooks.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

CONFIG_PATH = ".vime-sync/gate.toml"
DEFAULT_TIMEOUT_S = 300


class GateConfigError(ValueError):
    """A gate.toml that cannot be used; the message names the file, the entry and the fix."""


@dataclass(frozen=True)
class ContractRun:
    """Contract files run together in one subprocess, with their ``--xxx-path`` arguments."""

    files: tuple[str, ...]
    args: tuple[str, ...] = ()
    timeout: int = DEFAULT_TIMEOUT_S

    @property
    def label(self) -> str:
        return " ".join([*(Path(f).name for f in self.files), *self.args])


@dataclass
class GateConfig:
    contracts: list[ContractRun] = field(default_factory=list)  # empty: vime's defaults
    exclude: list[str] = field(default_factory=list)
    source: str | None = None  # the config file, when there is one
    static_mode: str = "all"  # "regressions": static failures present before the window do not count


def load_gate_config(worktree: Path) -> GateConfig:
    path = worktree / CONFIG_PATH
    if not path.is_file():
        return GateConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise GateConfigError(f"{CONFIG_PATH}: not valid TOML ({exc}); fix the syntax") from None
    contracts = []
    for number, entry in enumerate(data.get("contract", []), start=1):
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
            raise GateConfigError(
                f'{CONFIG_PATH}: [[contract]] #{number} needs file = "tests/contract/test_X.py"'
            )
        args = entry.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise GateConfigError(f"{CONFIG_PATH}: [[contract]] #{number} args must be a list of strings")
        timeout = entry.get("timeout", DEFAULT_TIMEOUT_S)
        if not isinstance(timeout, int) or timeout <= 0:
            raise GateConfigError(
                f"{CONFIG_PATH}: [[contract]] #{number} timeout must be a positive integer (seconds)"
            )
        contracts.append(ContractRun(files=(entry["file"],), args=tuple(args), timeout=timeout))
    exclude = data.get("static", {}).get("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(e, str) for e in exclude):
        raise GateConfigError(f"{CONFIG_PATH}: [static] exclude must be a list of glob strings")
    mode = data.get("static", {}).get("mode", "all")
    if mode not in ("all", "regressions"):
        raise GateConfigError(f'{CONFIG_PATH}: [static] mode must be "all" or "regressions", not {mode!r}')
    return GateConfig(contracts=contracts, exclude=exclude, source=CONFIG_PATH, static_mode=mode)
