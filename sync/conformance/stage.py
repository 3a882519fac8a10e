"""The conformance stage of a translation: check a translated file's HTTP calls against vLLM's API.

``check_translation`` is the plumbing (a FileTranslation and the API in, findings out);
``translate_checked`` is ``translate_file`` followed by it, the translator the window uses, so
findings reach the review queue; ``check_tree`` does the same for ``vime-sync translate``, and
adds the tree-wide check of SGLang names imported through re-export modules. Every ``vime.*``
import and hook path is checked against the installed vime (``imports``): plugin files in each
translation, and in ``check_tree`` vime's own files too, against vime plus the translated tree.
A line that a finding names is never counted as converted: the rule applied there is questioned.
"""

from __future__ import annotations

from sync.conformance.check import RuleAt, check_calls, check_policies
from sync.conformance.extract import ExtractStatus, Wrapper, extract, wrappers_from_settings
from sync.conformance.imports import (
    PACKAGE,
    Surface,
    Union,
    check_file,
    checked_here,
    installed_surface,
)
from sync.conformance.model import Finding
from sync.conformance.reexports import module_name, reexport_hits
from sync.conformance.schema import Api, ApiUnavailable, load_api
from sync.rules import RuleSet
from sync.translate import translate_file
from sync.translator.codec import decode
from sync.translator.model import Applied, FileTranslation, Hit, TreeResult, TreeStats


def wrappers_of(rules: RuleSet) -> list[Wrapper]:
    return wrappers_from_settings(rules.settings)


def _rule_at(applied: list[Applied], hits: list[Hit], used: set[Applied]) -> RuleAt:
    """The rule applied on a line span (endpoint and field rules first), else the ``unsupported``
    rule that left it; records the applied ones it names (they are questioned, not converted)."""
    by_line: dict[int, list[Applied]] = {}
    for item in applied:
        if item.line > 0:
            by_line.setdefault(item.line, []).append(item)
    left = {hit.line: hit.rule_id for hit in sorted(hits)}

    def rule_at(first: int, last: int) -> str:
        found = [item for line in range(first, last + 1) for item in by_line.get(line, ())]
        if not found:
            return next((left[line] for line in range(first, last + 1) if line in left), "conformance")
        found.sort(key=lambda a: (not a.rule_id.startswith(("ep.", "field.", "shape.")), a.line, a.rule_id))
        used.add(found[0])
        return found[0].rule_id

    return rule_at


def check_translation(
    ft: FileTranslation,
    rules: RuleSet,
    api: Api | None,
    vime: Surface | Union | None = None,
    *,
    carried: Surface | None = None,
) -> FileTranslation:
    """Set ``http_calls``, ``findings`` and ``questioned`` of a translated file; returns it.

    HTTP calls of Python files against ``api``; ``vime.*`` imports and hook paths against ``vime``
    (``carried``: the translated tree, named in a finding when it holds the missing module).
    """
    if ft.kind not in ("python", "text") or ft.dst_path is None:
        return ft
    text, _clean = decode(ft.data)
    used: set[Applied] = set()
    rule_at = _rule_at(ft.applied, ft.unsupported, used)
    findings: list[Finding] = []
    if ft.kind == "python" and api is not None:
        found = extract(ft.dst_path, text, wrappers_of(rules))
        ft.conformance_unread = found.reason if found.status is ExtractStatus.FAILED else ""
        findings += check_calls(found.calls, api, rule_at)
        findings += check_policies(ft.dst_path, found.policies, api, rule_at)
        ft.http_calls = sum(1 for call in found.calls if call.checkable and call.engine)
    if vime is not None:
        findings += check_file(ft.dst_path, text, vime, rule_at, carried)
    ft.findings = sorted(findings)
    ft.questioned = used
    return ft


def api_key() -> str:
    """The installed vLLM (name==version) and vime (a digest of its source), or "none": part of the
    window's translation cache key, since findings follow both."""
    from sync.translator.vllm_flags import VllmNotInstalled, _installed_vllm

    vime = installed_surface()
    vime_key = vime.digest() if vime is not None else "none"
    try:
        return f"{_installed_vllm()[0]} vime:{vime_key}"
    except VllmNotInstalled:
        return f"none vime:{vime_key}"


def api_or_none() -> Api | None:
    try:
        return load_api()
    except ApiUnavailable:
        return None


def translate_checked(path: str, data: bytes, rules: RuleSet) -> FileTranslation:
    """``translate_file``, then the conformance check: HTTP calls when vLLM's API can be read here,
    and a plugin file's ``vime.*`` imports against the installed vime."""
    ft = translate_file(path, data, rules)
    vime = installed_surface() if ft.dst_path is not None and checked_here(ft.dst_path) else None
    return check_translation(ft, rules, api_or_none(), vime)


def tree_overlay(result: TreeResult) -> dict[str, str]:
    """The translated tree's own vime modules, ``{dotted name: source}``."""
    overlay = {}
    for ft in result.files:
        if ft.kind == "python" and ft.dst_path and ft.dst_path.split("/")[0] == PACKAGE:
            name = module_name(ft.dst_path)
            if name is not None:
                overlay[name] = decode(ft.data)[0]
    return overlay


def check_tree(result: TreeResult, rules: RuleSet, api: Api | None) -> TreeResult:
    """The conformance stage over a whole translated tree: HTTP calls (when ``api`` is given) and
    SGLang-only names imported through re-export modules (``reexports``); totals recomputed."""
    python = [ft for ft in result.files if ft.kind == "python" and ft.dst_path is not None]
    installed = installed_surface()
    carried = Surface(None, tree_overlay(result))
    both = Union([installed, carried]) if installed is not None else None
    for ft in result.files:
        vime = None
        if installed is not None and ft.dst_path is not None:
            vime = installed if checked_here(ft.dst_path) else both  # vime's own files: vime + the tree
        check_translation(ft, rules, api, vime, carried=carried)
    texts = [(ft.dst_path or "", decode(ft.data)[0]) for ft in python]
    by_path = {ft.dst_path: ft for ft in python}
    for path, hits in reexport_hits(texts, rules).items():
        ft = by_path[path]
        ft.unsupported = sorted(set(ft.unsupported) | set(hits))
    stats = TreeStats()
    for ft in result.files:
        stats.add(ft)
    return TreeResult(files=result.files, stats=stats)
