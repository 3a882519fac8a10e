"""Translate upstream (SGLang-targeted slime) files into vime's vLLM code — the plumbing.

``translate_file`` takes a path and its bytes and returns data (the translated bytes, the mapped
path, provenance, unsupported hits, unmapped references); nothing here touches a repository, so
the window/merge stage and the CLI call it the same way. See docs/translation.md.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor

import libcst as cst

from sync.rules import RuleSet
from sync.translator.codec import decode, encode, is_binary
from sync.translator.compiled import compiled
from sync.translator.model import Applied, FileTranslation, Hit, Ref, TreeResult, TreeStats
from sync.translator.python import translate_python
from sync.translator.scan import residual_hits, unmapped_references
from sync.translator.text import translate_text

__all__ = [
    "Applied",
    "FileTranslation",
    "Hit",
    "Ref",
    "TreeResult",
    "TreeStats",
    "translate_file",
    "translate_tree",
]

Progress = Callable[[str], None]


def translate_file(path: str, data: bytes, rules: RuleSet) -> FileTranslation:
    """Translate one upstream file. Binary and non-mirrored files come back unchanged."""
    dst_path, path_rules = rules.map_path_with_rules(path)
    if dst_path is None:
        return FileTranslation(path, None, data, "not_mirrored")
    path_applied = [Applied(rule.id, 0) for rule in path_rules]
    if is_binary(data):
        return FileTranslation(path, dst_path, data, "binary", applied=path_applied)
    text, _clean_utf8 = decode(data)
    bom = "\ufeff" if text.startswith("\ufeff") else ""  # libcst would drop it: translate without, put back
    text = text[len(bom) :]
    rules_c = compiled(rules)
    parse_error = None
    kind = "python" if path.endswith(".py") else "text"
    if kind == "python":
        try:
            new_text, applied, hits = translate_python(text, path, dst_path, rules_c)
        except (cst.ParserSyntaxError, RecursionError, UnicodeEncodeError) as error:
            parse_error = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else error!r}"
            # a file that does not parse gets no rewrite: prose rules would change code they cannot
            # tell from prose (``import sglang`` -> ``import vLLM``); its references stay unmapped.
            # Undecodable bytes (valid code libcst cannot encode) still get the text rules.
            keep = not isinstance(error, UnicodeEncodeError)
            new_text, applied, hits = (text, [], []) if keep else translate_text(text, path, rules_c)
    else:
        new_text, applied, hits = translate_text(text, path, rules_c)
    lines = new_text.split("\n")
    all_hits = sorted(set(hits) | set(residual_hits(rules_c, lines, path)))
    unmapped = unmapped_references(rules_c, path, lines, all_hits)
    return FileTranslation(
        src_path=path,
        dst_path=dst_path,
        data=encode(bom + new_text) if new_text != text else data,
        kind=kind,
        applied=path_applied + applied,
        unsupported=all_hits,
        unmapped=unmapped,
        parse_error=parse_error,
    )


PARALLEL_MIN_FILES = 64  # below this, starting worker processes costs more than it saves


def _translate_chunk(rules: RuleSet, chunk: list[tuple[str, bytes]]) -> list[FileTranslation]:
    return [translate_file(path, data, rules) for path, data in chunk]


def _chunks(files: list[tuple[str, bytes]], size: int) -> list[list[tuple[str, bytes]]]:
    return [files[start : start + size] for start in range(0, len(files), size)]


def translate_tree(
    files: Iterable[tuple[str, bytes]],
    rules: RuleSet,
    progress: Progress | None = None,
    workers: int | None = None,
) -> TreeResult:
    """Translate many files and total them up.

    Results come back sorted by path whatever the number of worker processes (default: one per
    CPU, up to 8, for trees of PARALLEL_MIN_FILES files or more on machines with 4 or more CPUs;
    one process otherwise), so the output is deterministic.
    """
    ordered = sorted(files, key=lambda item: item[0])
    compiled(rules).vllm_options()  # read vLLM's serve options once, before any worker forks
    if workers is None:
        cpus = os.cpu_count() or 1
        # On 2 cores shared with other work, a pool measured slower than one process (docs/benchmarks.md).
        workers = min(cpus, 8) if cpus >= 4 and len(ordered) >= PARALLEL_MIN_FILES else 1
    results: list[FileTranslation] = []
    if workers <= 1:
        for path, data in ordered:
            results.append(translate_file(path, data, rules))
            if progress is not None:
                progress(path)
    else:
        context = multiprocessing.get_context(
            "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        )
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures = [pool.submit(_translate_chunk, rules, chunk) for chunk in _chunks(ordered, 16)]
            for future in futures:
                for result in future.result():
                    results.append(result)
                    if progress is not None:
                        progress(result.src_path)
    stats = TreeStats()
    for result in results:
        stats.add(result)
    return TreeResult(files=results, stats=stats)
