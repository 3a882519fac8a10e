"""Translate upstream (SGLang-targeted slime) files into vime's vLLM code — the plumbing.

``translate_file`` takes a path and its bytes and returns data (the translated bytes, the mapped
path, provenance, unsupported hits, unmapped references); nothing here touches a repository, so
the window/merge stage and the CLI call it the same way. See docs/translation.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

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
    rules_c = compiled(rules)
    parse_error = None
    kind = "python" if path.endswith(".py") else "text"
    if kind == "python":
        try:
            new_text, applied, hits = translate_python(text, path, dst_path, rules_c)
        except (cst.ParserSyntaxError, RecursionError, UnicodeEncodeError, ValueError) as error:
            parse_error = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else error!r}"
            new_text, applied, hits = translate_text(text, path, rules_c)
    else:
        new_text, applied, hits = translate_text(text, path, rules_c)
    lines = new_text.split("\n")
    all_hits = sorted(set(hits) | set(residual_hits(rules_c, lines)))
    unmapped = unmapped_references(rules_c, path, lines, all_hits)
    return FileTranslation(
        src_path=path,
        dst_path=dst_path,
        data=encode(new_text) if new_text != text else data,
        kind=kind,
        applied=path_applied + applied,
        unsupported=all_hits,
        unmapped=unmapped,
        parse_error=parse_error,
    )


def translate_tree(
    files: Iterable[tuple[str, bytes]], rules: RuleSet, progress: Progress | None = None
) -> TreeResult:
    """Translate many files (sorted by path, so results are deterministic) and total them up."""
    results: list[FileTranslation] = []
    stats = TreeStats()
    for path, data in sorted(files, key=lambda item: item[0]):
        result = translate_file(path, data, rules)
        results.append(result)
        stats.add(result)
        if progress is not None:
            progress(path)
    return TreeResult(files=results, stats=stats)
