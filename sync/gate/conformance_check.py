"""The gate's conformance check: every HTTP call in the worktree's Python code, against the
installed vLLM's API, and every SGLang-only name imported through a re-export module; each is a
gate failure naming the file, line and upstream PRs."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sync.conformance.check import check_calls, check_policies
from sync.conformance.extract import ExtractStatus, extract
from sync.conformance.reexports import reexport_hits
from sync.conformance.schema import ApiUnavailable, load_api
from sync.conformance.stage import wrappers_of
from sync.model.gate import CheckSummary, FilePRs, GateFailure
from sync.rules import RuleSet
from sync.textio import read_text

NAME = "conformance"


def check_conformance(
    worktree: Path, py_files: Iterable[str], rules: RuleSet, file_prs: FilePRs
) -> tuple[list[GateFailure], CheckSummary]:
    """Failures and the check's summary (skipped, with why, when vLLM's API cannot be read)."""
    try:
        api = load_api()
    except ApiUnavailable as error:
        return [], CheckSummary(NAME, "skipped", 0, str(error))
    wrappers = wrappers_of(rules)
    failures, calls = [], 0
    texts = {rel: text for rel in sorted(py_files) if (text := read_text(worktree / rel)) is not None}
    for rel, hits in sorted(reexport_hits(texts.items(), rules).items()):
        for hit in hits:
            failures.append(
                GateFailure.about(
                    NAME,
                    f"{rel}:{hit.line}: {hit.snippet.split('# ', 1)[-1]} (rule {hit.rule_id}); "
                    f"replace it with vLLM's or vime's own, or keep it on purpose with a keep rule",
                    [rel],
                    file_prs,
                    line=hit.line,
                )
            )
    unread: list[str] = []
    for rel, text in texts.items():
        found = extract(rel, text, wrappers)
        if found.status is ExtractStatus.FAILED:
            unread.append(rel)
        calls += sum(1 for call in found.calls if call.checkable and call.engine)
        for finding in check_calls(found.calls, api) + check_policies(rel, found.policies, api):
            failures.append(
                GateFailure.about(
                    NAME,
                    f"{rel}:{finding.line}: {finding.message} ({finding.effect}); make the call "
                    f"match vLLM's route, or fix the rule in translations/strings.toml",
                    [rel],
                    file_prs,
                    line=finding.line,
                )
            )
    note = f"{calls} HTTP call(s) to vLLM / vllm-router against {api.version}"
    if unread:  # the syntax check names them; here they only leave calls unchecked
        note += f"; {len(unread)} file(s) not checked, they do not parse: {', '.join(sorted(unread))}"
    return failures, CheckSummary(NAME, "failed" if failures else "passed", calls, note)
