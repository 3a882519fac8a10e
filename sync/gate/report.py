"""Write the gate's verdict into the sync report: ``gate.json`` (data) and ``GATE.md`` (for reviewers)."""

from __future__ import annotations

import json
from pathlib import Path

from sync.model.gate import GateResult, pr_label


def render_markdown(result: GateResult) -> str:
    verdict = "PASSED" if result.passed else f"FAILED ({len(result.failures)} failure(s))"
    lines = [f"## Gate: {verdict}", ""]
    if result.prs:
        lines += ["PRs behind the failures: " + ", ".join(pr_label(pr) for pr in result.prs), ""]
    lines += ["| check | status | checked | note |", "|---|---|---|---|"]
    for check in result.checks:
        lines.append(f"| {check.name} | {check.status} | {check.checked} | {check.note} |")
    if result.failures:
        lines += ["", "### Failures", ""]
        for failure in result.failures:
            prs = ", ".join(pr_label(pr) for pr in failure.prs) or "none in the window"
            files = ", ".join(f"`{f}`" for f in failure.files) or "-"
            lines.append(f"- **{failure.check}**: {failure.message}  \n  files: {files}; PRs: {prs}")
    if result.notes:
        lines += ["", "### Notes", ""] + [f"- {note}" for note in result.notes]
    return "\n".join(lines) + "\n"


def write_report(result: GateResult, report_dir: Path) -> tuple[Path, Path]:
    report_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = report_dir / "gate.json", report_dir / "GATE.md"
    json_path.write_text(json.dumps(result.to_dict(), indent=2) + "\n", encoding="utf-8")
    md_path.write_text(render_markdown(result), encoding="utf-8")
    return json_path, md_path
