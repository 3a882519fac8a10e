"""Two upstream paths that would land on one downstream path after translation.

Why: the path rules rename (``sglang`` -> ``vllm``), so ``slime/utils/sglang_x.py`` and
``slime/utils/vllm_x.py`` both become ``vime/utils/vllm_x.py``; written one after the other, one
file silently replaces the other. The same holds for a file whose path another needs as a folder
(``vime/a`` and ``vime/a/b``). ``translate``, ``rules check --upstream`` and the window's checks
refuse such a tree before anything is written, naming both upstream paths.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sync.layout import Layout
    from sync.rules import RuleSet

FIX = (
    "map one of them elsewhere (a path rule, or an entry in the downstream's translations/layout.toml "
    'such as "<upstream path>" = "<another downstream path>"), or mark it "ignore"'
)


@dataclass(frozen=True)
class Collision:
    """Upstream paths that meet at ``target`` (``folder``: ``sources[0]`` is a file where the others
    need a folder)."""

    target: str
    sources: tuple[str, ...]
    folder: bool = False

    def describe(self) -> str:
        if self.folder:
            return (
                f"{self.sources[0]} translates to the file {self.target}, where {', '.join(self.sources[1:])} "
                "needs a folder"
            )
        names = f"{', '.join(self.sources[:-1])} and {self.sources[-1]}"
        return f"{names} {'both' if len(self.sources) == 2 else 'all'} translate to {self.target}"


def landing_path(rules: RuleSet, layout: Layout | None, upstream_path: str) -> str | None:
    """Where an upstream file lands downstream: the layout's path or the rules' (None: ignored, or a
    port request, which never lands)."""
    place = layout.place(upstream_path) if layout is not None else None
    if place is not None and place.action in ("ignore", "port"):
        return None
    return (place.to if place is not None else None) or rules.map_path(upstream_path)


def find_collisions(targets: Mapping[str, str | None] | Iterable[tuple[str, str | None]]) -> list[Collision]:
    """Every downstream path that more than one upstream path lands on (upstream path -> target;
    None: not landing), and every file target that another target needs as a folder."""
    pairs = targets.items() if isinstance(targets, Mapping) else targets
    by_target: dict[str, set[str]] = defaultdict(set)
    for source, target in pairs:
        if target is not None:
            by_target[target].add(source)
    found = [Collision(t, tuple(sorted(s))) for t, s in sorted(by_target.items()) if len(s) > 1]
    for target in sorted(by_target):
        parts = target.split("/")
        for i in range(1, len(parts)):
            folder = "/".join(parts[:i])
            if folder in by_target:
                found.append(Collision(folder, (min(by_target[folder]), min(by_target[target])), folder=True))
    return found


def involving(collisions: list[Collision], paths: Iterable[str]) -> list[Collision]:
    """The collisions that touch one of ``paths`` (the files a window changes)."""
    wanted = set(paths)
    return [c for c in collisions if wanted & set(c.sources)]


def refusal(collisions: list[Collision]) -> str:
    """One line for the first collision (and how many more), with the fix."""
    first = collisions[0].describe()
    more = f" (and {len(collisions) - 1} more)" if len(collisions) > 1 else ""
    return f"{first}{more}; one would overwrite the other: {FIX}"
