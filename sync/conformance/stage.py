"""The conformance stage of a translation: check a translated file's HTTP calls against vLLM's API.

``check_translation`` is the plumbing (a FileTranslation and the API in, findings out);
``translate_checked`` is ``translate_file`` followed by it, the translator the window uses, so
findings reach the review queue; ``check_tree`` does the same for ``vime-sync translate``, and
adds the tree-wide check of SGLang names imported through re-export modules.
A line that a finding names is never counted as converted: the rule applied there is questioned.
"""

from __future__ import annotations

from sync.conformance.check import RuleAt, check_calls, check_policies
from sync.conformance.extract import Wrapper, extract, wrappers_from_settings
from sync.conformance.model import Finding
from sync.conformance.reexports import reexport_hits
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


def check_translation(ft: FileTranslation, rules: RuleSet, api: Api) -> FileTranslation:
    """Set ``http_calls``, ``findings`` and ``questioned`` of a translated Python file; returns it."""
    if ft.kind != "python" or ft.dst_path is None:
        return ft
    text, _clean = decode(ft.data)
    found = extract(ft.dst_path, text, wrappers_of(rules))
    used: set[Applied] = set()
    rule_at = _rule_at(ft.applied, ft.unsupported, used)
    findings: list[Finding] = check_calls(found.calls, api, rule_at)
    findings += check_policies(ft.dst_path, found.policies, api, rule_at)
    ft.http_calls = sum(1 for call in found.calls if call.checkable and call.engine)
    ft.findings = sorted(findings)
    ft.questioned = used
    return ft


def api_key() -> str:
    """The installed vLLM (name==version), or "none": part of the window's translation cache key."""
    from sync.gate.vllm_flags import VllmNotInstalled, _installed_vllm

    try:
        return _installed_vllm()[0]
    except VllmNotInstalled:
        return "none"


def api_or_none() -> Api | None:
    try:
        return load_api()
    except ApiUnavailable:
        return None


def translate_checked(path: str, data: bytes, rules: RuleSet) -> FileTranslation:
    """``translate_file``, then the conformance check when vLLM's API can be read here."""
    ft = translate_file(path, data, rules)
    api = api_or_none()
    return check_translation(ft, rules, api) if api is not None else ft


def check_tree(result: TreeResult, rules: RuleSet, api: Api | None) -> TreeResult:
    """The conformance stage over a whole translated tree: HTTP calls (when ``api`` is given) and
    SGLang-only names imported through re-export modules (``reexports``); totals recomputed."""
    python = [ft for ft in result.files if ft.kind == "python" and ft.dst_path is not None]
    for ft in python:
        if api is not None:
            check_translation(ft, rules, api)
    texts = [(ft.dst_path or "", decode(ft.data)[0]) for ft in python]
    by_path = {ft.dst_path: ft for ft in python}
    for path, hits in reexport_hits(texts, rules).items():
        ft = by_path[path]
        ft.unsupported = sorted(set(ft.unsupported) | set(hits))
    stats = TreeStats()
    for ft in result.files:
        stats.add(ft)
    return TreeResult(files=result.files, stats=stats)
