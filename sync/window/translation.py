"""Translate upstream blobs through the translator, cached by (blob id, path, translator+rules fingerprint).

Why a cache: libcst translation dominates a window's cost; the base side of every window is the
tip side of the previous one, and a re-run of the same window should cost almost nothing.
"""

from __future__ import annotations

import hashlib
import os
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sync.rules import RuleSet

from sync.model.translated import FileTranslationLike, Translated

#: (repository path, upstream bytes, rules) -> the file's translation (vime's ``translate_file``,
#: ``translate_checked``, or one a test injects)
TranslateFn = Callable[[str, bytes, "RuleSet"], FileTranslationLike]


def _translator_sources(translate_fn: TranslateFn) -> list[Path]:
    """Source files whose change may change a translation: the function's module, and for vime's own
    translator the rules loader and the ``sync/translator`` package (not the rest of ``sync``)."""
    sources: list[Path] = []
    module = sys.modules.get(getattr(translate_fn, "__module__", "") or "")
    module_file = getattr(module, "__file__", None)
    if module_file:
        sources.append(Path(module_file).resolve())
    sync_root = Path(__file__).resolve().parents[1]
    if sources and sources[0].parent in (sync_root, sync_root / "conformance"):
        sources += [sync_root / "rules.py", sync_root / "translate.py"]
        sources += sorted((sync_root / "translator").rglob("*.py"))
        sources += sorted((sync_root / "conformance").glob("*.py"))
    return [s for s in sources if s.exists()]


def translator_fingerprint(rules_hash: str, translate_fn: TranslateFn) -> str:
    """Hash of the rules plus the translator's own source, so a code change invalidates the cache too."""
    h = hashlib.sha256(rules_hash.encode())
    h.update(f"{translate_fn.__module__}:{translate_fn.__qualname__}".encode())
    # findings, and which --vllm-* flags a flag rule may write, follow the vLLM installed
    if translate_fn.__module__.startswith(("sync.conformance", "sync.translate")):
        from sync.conformance.stage import api_key

        h.update(api_key().encode())
    for src in _translator_sources(translate_fn):
        h.update(src.name.encode() + b"\0" + src.read_bytes())
    return h.hexdigest()[:32]


class TranslationCache:
    """On-disk cache under the downstream's ``.git/vime-sync-cache/<fingerprint>/`` (never committed)."""

    def __init__(self, root: Path | None, fingerprint: str) -> None:
        self.dir = root / fingerprint if root is not None else None
        self.memory: dict[tuple[str, str], Translated] = {}  # filled by the parallel pre-pass
        self.hits = 0
        self.misses = 0
        self.written: list[Path] = []  # entries this run added (removed again if the run rolls back)
        self.made_root = False  # whether this run made the cache folder itself

    def _file(self, path: str, oid: str) -> Path:
        assert self.dir is not None
        key = hashlib.sha256(f"{oid}\0{path}".encode("utf-8", "surrogateescape")).hexdigest()
        return self.dir / key[:2] / key[2:]

    def get(self, path: str, oid: str) -> Translated | None:
        if self.dir is None:
            return None
        f = self._file(path, oid)
        if not f.exists():
            return None
        try:
            return Translated.from_json(f.read_text())
        except (ValueError, KeyError, OSError):
            return None

    def put(self, path: str, oid: str, value: Translated) -> None:
        if self.dir is None:
            return
        f = self._file(path, oid)
        if self.dir is not None and not self.dir.parent.exists():
            self.made_root = True
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_name(f"{f.name}.{os.getpid()}-{uuid.uuid4().hex}.tmp")  # unique: runs may overlap
        try:
            tmp.write_text(value.to_json())
            existed = f.exists()
            tmp.replace(f)
        finally:
            tmp.unlink(missing_ok=True)
        if not existed:
            self.written.append(f)

    def forget_written(self) -> None:
        """Remove the entries this run added (the rollback of an aborted window)."""
        while self.written:
            entry = self.written.pop()
            entry.unlink(missing_ok=True)
            for folder in (
                entry.parent,
                entry.parent.parent,
            ):  # the shard and fingerprint folders, if now empty
                if folder != self.dir.parent and folder.is_dir() and not any(folder.iterdir()):
                    folder.rmdir()
        root = self.dir.parent if self.dir is not None else None
        if self.made_root and root is not None and root.is_dir() and not any(root.iterdir()):
            root.rmdir()  # the cache folder this run made


def translate_one(
    path: str,
    oid: str,
    read_blob: Callable[[str], bytes],
    translate_fn: TranslateFn,
    rules: RuleSet,
    cache: TranslationCache,
) -> Translated:
    """Translation of upstream blob ``oid`` at ``path``, from the cache when present."""
    if (path, oid) in cache.memory:
        return cache.memory[(path, oid)]
    cached = cache.get(path, oid)
    if cached is not None:
        cache.hits += 1
        return cached
    cache.misses += 1
    result = Translated.from_file_translation(translate_fn(path, read_blob(oid), rules))
    cache.put(path, oid, result)
    return result
