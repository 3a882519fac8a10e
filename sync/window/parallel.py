"""Translate the cache misses of a window on several processes before the merge loop runs.

libcst translation is CPU-bound and dominates a cold window; files are independent, so a process
pool cuts the wall time by about the number of free cores. Results are identical to the sequential
path (the same function on the same bytes); any pool failure falls back to it.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from rich.console import Console

from sync.window.progress import stage_progress
from sync.window.translation import Translated, TranslateFn, TranslationCache

MIN_PARALLEL = 64  # below this, starting processes costs more than it saves
_WORKER: dict[str, Any] = {}


def _init(translate_fn: TranslateFn, rules: Any) -> None:
    _WORKER["fn"], _WORKER["rules"] = translate_fn, rules


def _work(path: str, data: bytes) -> Translated:
    return Translated.from_file_translation(_WORKER["fn"](path, data, _WORKER["rules"]))


def default_workers() -> int:
    """``VIME_SYNC_JOBS`` if set, else the cores this process may use (at most 4)."""
    env = os.environ.get("VIME_SYNC_JOBS")
    if env:
        return max(1, int(env))
    return min(len(os.sched_getaffinity(0)), 4)


def pretranslate(
    jobs: Iterable[tuple[str, str]],
    read_blob: Callable[[str], bytes],
    translate_fn: TranslateFn,
    rules: Any,
    cache: TranslationCache,
    console: Console,
    workers: int | None = None,
) -> int:
    """Fill ``cache.memory`` (and the disk cache) for every (path, blob) not cached yet; return how many."""
    todo = sorted({job for job in jobs if job not in cache.memory and cache.get(*job) is None})
    workers = workers or default_workers()
    if len(todo) < MIN_PARALLEL or workers < 2:
        return 0
    done = 0
    try:
        # fork: workers inherit the translator and rules; started at the first submit, before any
        # progress thread exists in this process
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(
            workers, mp_context=ctx, initializer=_init, initargs=(translate_fn, rules)
        ) as pool:
            futures = {pool.submit(_work, path, read_blob(oid)): (path, oid) for path, oid in todo}
            title = f"translate {len(todo)} files on {workers} processes"
            with stage_progress(console, title, len(todo)) as advance:
                for future in as_completed(futures):
                    path, oid = futures[future]
                    result = future.result()
                    cache.memory[(path, oid)] = result
                    cache.put(path, oid, result)
                    cache.misses += 1
                    done += 1
                    advance(path)
    except (BrokenProcessPool, OSError) as exc:
        console.print(f"[yellow]parallel translation stopped ({exc}); continuing one file at a time[/yellow]")
    return done
