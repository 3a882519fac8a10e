"""The record of the last sync, kept in the downstream repository so the next window needs only ``--to``.

Like Copybara's baseline: the next run reads its base from here. Written on the sync branch by
commit 1, so it reaches main when the sync branch merges.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from sync.gitio import GitError, git

STATE_DIR = ".vime-sync"
STATE_PATH = f"{STATE_DIR}/state.toml"


@dataclass(frozen=True)
class SyncState:
    """Where the downstream stands relative to upstream after the last sync."""

    cutoff: str
    last_pr: int
    rules_hash: str
    from_pr: int | None = None

    def to_toml(self) -> str:
        lines = [
            "# Written by vime-sync window: the upstream commit the downstream is in step with.",
            "# The next `vime-sync window --to N` starts after this cutoff.",
            "[last_sync]",
            f'cutoff = "{self.cutoff}"',
            f"last_pr = {self.last_pr}",
            f'rules_hash = "{self.rules_hash}"',
        ]
        if self.from_pr is not None:
            lines.append(f"from_pr = {self.from_pr}")
        return "\n".join(lines) + "\n"

    @classmethod
    def from_toml(cls, text: str) -> SyncState:
        data = tomllib.loads(text).get("last_sync")
        if not isinstance(data, dict):
            raise ValueError("it has no [last_sync] table")
        fields = {"cutoff": str, "last_pr": int, "rules_hash": str}
        for name, kind in fields.items():
            if not isinstance(data.get(name), kind) or isinstance(data.get(name), bool):
                raise ValueError(f"last_sync.{name} must be a {kind.__name__}, not {data.get(name)!r:.40}")
        from_pr = data.get("from_pr")
        if from_pr is not None and (not isinstance(from_pr, int) or isinstance(from_pr, bool)):
            raise ValueError(f"last_sync.from_pr must be an int, not {from_pr!r:.40}")
        return cls(data["cutoff"], data["last_pr"], data["rules_hash"], from_pr)


def read_state(downstream: Path, rev: str = "HEAD") -> SyncState | None:
    """The state committed at ``rev`` of the downstream, or None before the first sync."""
    try:
        raw = git(downstream, "show", f"{rev}:{STATE_PATH}")
    except GitError:
        return None
    try:
        return SyncState.from_toml(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, ValueError) as exc:
        reason = str(exc).splitlines()[0]
        raise ValueError(
            f"{STATE_PATH} (committed at {rev}) is unreadable ({reason}); fix it, or pass --from N (or --cutoff "
            "COMMIT) and the window rewrites it"
        ) from exc
