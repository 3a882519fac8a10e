"""The downstream's layout map: where upstream paths go in *this* downstream, beyond the path rules.

``translations/layout.toml`` in the downstream's own tree (never the packaged tables: a layout
belongs to one downstream)::

    kind = "layout"
    default = "mirror"        # unlisted paths follow the path rules; "port": every unlisted path is a port request
    [paths]
    "slime/ray/rollout.py" = { port = "vime/ray/rollout_manager.py" }  # vime does this its own way, there
    "slime/utils/arguments.py" = "owned"      # vime-owned at the path the rules give
    "docs/zh/" = "ignore"                     # not mirrored
    "slime_plugins/foo/" = "vime_plugins/bar/"  # mapped: merged at that path
    "tests/" = "mirror"                       # mirrored even when the default is "port"

A key is an exact path, a folder (ending in ``/``) or a glob; the most specific key wins (exact,
then the longest folder, then the longest glob). Owned and port paths never merge or land
silently: upstream changes to them become port requests with the translated diff.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass, field

LAYOUT_FILE = "translations/layout.toml"
DEFAULTS = ("mirror", "port")
WORDS = ("owned", "ignore", "mirror")


class LayoutError(ValueError):
    """The layout file is malformed; the message is one line naming the entry and the fix."""


@dataclass(frozen=True)
class Placement:
    """Where one upstream path goes: ``mirror`` (at ``to`` or the rules' path), ``port`` or ``ignore``."""

    action: str
    to: str | None = None  # the downstream path, when the layout names one
    key: str = ""  # the layout entry that decided it ("" for the default)

    @property
    def why(self) -> str:
        where = f"layout entry {self.key!r}" if self.key else "layout default"
        return f"{where}: {self.action}" + (f" -> {self.to}" if self.to else "")


@dataclass
class Layout:
    default: str = "mirror"
    entries: dict[str, str | dict[str, str]] = field(default_factory=dict)
    present: bool = False  # whether the downstream has a layout file at all

    def _match(self, path: str) -> tuple[str, str | dict[str, str]] | None:
        if path in self.entries:
            return path, self.entries[path]
        folders = [k for k in self.entries if k.endswith("/") and path.startswith(k)]
        if folders:
            k = max(folders, key=len)
            return k, self.entries[k]
        globs = [k for k in self.entries if any(ch in k for ch in "*?[") and fnmatch.fnmatchcase(path, k)]
        if globs:
            k = max(globs, key=len)
            return k, self.entries[k]
        return None

    def place(self, upstream_path: str) -> Placement:
        hit = self._match(upstream_path)
        if hit is None:
            return Placement(self.default)
        key, value = hit
        if isinstance(value, dict):
            return Placement("port", _target(key, value["port"], upstream_path), key)
        if value == "owned":
            return Placement("port", None, key)
        if value in ("ignore", "mirror"):
            return Placement(value, None, key)
        return Placement("mirror", _target(key, value, upstream_path), key)


def _target(key: str, to: str, upstream_path: str) -> str:
    """A folder onto a folder keeps the rest of the path; a file or glob onto a folder keeps its name."""
    if not to.endswith("/"):
        return to
    if key.endswith("/"):
        return to + upstream_path[len(key) :]
    return to + upstream_path.rsplit("/", 1)[-1]


def parse_layout(text: str, source: str = LAYOUT_FILE) -> Layout:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LayoutError(f"{source}: not valid TOML ({exc}); fix the syntax") from None
    if data.get("kind") != "layout":
        raise LayoutError(f'{source}: kind must be "layout"; add kind = "layout" at the top')
    default = data.get("default", "mirror")
    if default not in DEFAULTS:
        raise LayoutError(f"{source}: default {default!r} must be one of {', '.join(DEFAULTS)}")
    entries = data.get("paths", {})
    for key, value in entries.items():
        ok = (isinstance(value, str) and value) or (
            isinstance(value, dict) and set(value) == {"port"} and isinstance(value["port"], str)
        )
        if not ok:
            raise LayoutError(
                f'{source}: [paths] {key!r} must be "owned", "ignore", "mirror", a downstream path, '
                'or { port = "<downstream path>" }'
            )
    return Layout(default, dict(entries), True)
