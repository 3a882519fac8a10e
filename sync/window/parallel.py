"""Translate the cache misses of a window on several processes before the merge loop runs.

libcst translation is CPU-bound and dominates a cold window; files are independent, so a process
pool cuts the wall time by about the number of free cores. Results are identical to the sequential
path (the same function on the same bytes); any pool failure falls back to it.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any

from rich.console import Console

from sync.model.errors import SyncError
from sync.window.progress import stage_progress
from sync.window.translation import Translated, TranslateFn, TranslationCache

if TYPE_CHECKING:
    from sync.rules import RuleSet

MIN_PARALLEL = (
    64  # files: below this (and below MIN_PARALLEL_BYTES), starting processes costs more than it saves
)
MIN_PARALLEL_BYTES = 256 * 1024  # about a second of real translation; starting two workers takes ~0.1 s
_WORKER: dict[str, Any] = {}


def _init(translate_fn: TranslateFn, rules: RuleSet) -> None:
    # The parent handles Ctrl-C and ends the workers; a worker ends on SIGTERM, and when the parent dies.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG (Linux)
    _WORKER["fn"], _WORKER["rules"] = translate_fn, rules


def _work(path: str, versions: list[bytes]) -> list[Translated]:
    """Every version of one file in one worker: the second reuses the first's unchanged statements
    (``sync.translator.memo``), which only works within one process."""
    return [
        Translated.from_file_translation(_WORKER["fn"](path, data, _WORKER["rules"])) for data in versions
    ]


def default_workers() -> int:
    """``VIME_SYNC_JOBS`` if set, else the cores this process may use (at most 4)."""
    env = os.environ.get("VIME_SYNC_JOBS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise SyncError(
                f"VIME_SYNC_JOBS={env!r} is not a positive whole number; set it to e.g. 2, or unset it"
            )
        return int(env)
    return min(len(os.sched_getaffinity(0)), 4)


def pretranslate(
    jobs: Iterable[tuple[str, str]],
    read_blob: Callable[[str], bytes],
    translate_fn: TranslateFn,
    rules: RuleSet,
    cache: TranslationCache,
    console: Console,
    workers: int | None = None,
    title: str = "translate",
) -> int:
    """Fill ``cache.memory`` (and the disk cache) for every (path, blob) not cached yet; return how many."""
    todo = sorted({job for job in jobs if job not in cache.memory and cache.get(*job) is None})
    workers = workers or default_workers()
    if not todo or workers < 2:
        return 0
    blobs = {job: read_blob(job[1]) for job in todo}
    if len(todo) < MIN_PARALLEL and sum(map(len, blobs.values())) < MIN_PARALLEL_BYTES:
        return 0
    by_path: dict[str, list[tuple[str, str]]] = {}
    for job in todo:
        by_path.setdefault(job[0], []).append(job)
    groups = sorted(by_path.values(), key=lambda jobs: -sum(len(blobs[job]) for job in jobs))  # largest first
    before = set(multiprocessing.active_children())
    done = 0
    # fork: workers inherit the translator and rules; started at the first submit, before any
    # progress thread exists in this process
    ctx = multiprocessing.get_context("fork")
    pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init, initargs=(translate_fn, rules))
    try:
        futures = {pool.submit(_work, jobs[0][0], [blobs[job] for job in jobs]): jobs for jobs in groups}
        title = f"{title} {len(todo)} files on {workers} processes"
        with stage_progress(console, title, len(todo)) as advance:
            for future in as_completed(futures):
                for (path, oid), result in zip(futures[future], future.result(), strict=True):
                    cache.memory[(path, oid)] = result
                    cache.put(path, oid, result)
                    cache.misses += 1
                    done += 1
                    advance(path)
    except (BrokenProcessPool, OSError) as exc:
        console.print(f"[yellow]parallel translation stopped ({exc}); continuing one file at a time[/yellow]")
    except BaseException:
        # Ctrl-C, SIGTERM or a failed translation: drop the queue at once instead of finishing it
        pool.shutdown(wait=False, cancel_futures=True)
        _end_workers(before)
        raise
    pool.shutdown(wait=True)
    return done


def _end_workers(before: set[Any]) -> None:
    for proc in multiprocessing.active_children():
        if proc not in before:
            proc.kill()
            proc.join(2)
