"""QUESTIONS.md and decisions.json: the review queue for people and for ``vime-sync resolve``.

decisions.json schema (``vime-sync/decisions/v1``; documented in docs/sync.md)::

    {"schema": "vime-sync/decisions/v1",
     "window": {"name", "from", "to", "cutoff", "tip", "branch"},
     "files": {"<vime path>": {"outcome", "upstream", "renamed_from", "prs", "marker_size",
                               "settled"}},   # settled: what each side changed (outcome structural only)
     "questions": [{"id": "Q1", "kind": "conflict|add_add|modify_delete|binary|unsupported|unmapped|parse_error",
                    "file", "hunk", "lines": [start, end], "prs", "rules", "tier": "Decide|Confirm|Settled",
                    "options", "default", "key", "summary", "marker_size", "sides": {"ours","base","theirs"},
                    "alternative", "decision": null | option, "edit": null | text,
                    "sites": [{"file", "lines", "prs", "snippet", "key", "decision", "edit",
                               "upstream", "diff", "alternative"}],   # the last three: port groups
                    "diff": null | "ports/<path>.diff"}]}

A grouped question (``unsupported`` per rule, ``unmapped`` per reference, ``port`` per layout entry
or upstream folder with more than one file) lists its ``sites``; its decision (an ``edit`` text too)
applies to every site unless a site has its own (a port site: ``ours`` or ``theirs``).

A reviewer fills ``decision`` (and ``edit`` when the decision is ``edit``); resolve uses ``default``
for Confirm questions left open and refuses while a Decide question has no decision.
"""

from __future__ import annotations

import json
from typing import Any

from sync.markdown import fenced, pr_list
from sync.model.question import Tier
from sync.reports.context import ReportContext
from sync.reports.questions import Question, tier_counts
from sync.reports.summary import settled_files

SCHEMA = "vime-sync/decisions/v1"
MAX_SITES = 60


def _one_line(snippet: str) -> str:
    text = " ".join(snippet.split()).replace("`", "'")
    return text if len(text) <= 100 else text[:97] + "..."


def decisions_doc(ctx: ReportContext) -> dict[str, Any]:
    w = ctx.window
    asked = {q.file for q in ctx.questions} | {s["file"] for q in ctx.questions for s in q.sites}
    return {
        "schema": SCHEMA,
        "window": {
            "name": ctx.name,
            "from": w.from_pr,
            "to": w.to_pr,
            "cutoff": w.cutoff,
            "tip": w.tip,
            "branch": ctx.branch,
        },
        "files": {
            o.path: {
                "outcome": o.outcome,
                "upstream": o.upstream_path,
                "renamed_from": o.renamed_from,
                "prs": ctx.prs_for(o),
                "marker_size": o.marker_size,
                **({"settled": o.note} if o.outcome == "structural" else {}),
                **({"regions": ctx.provenance.regions(o)} if ctx.provenance and o.path in asked else {}),
            }
            for o in sorted(ctx.outcomes, key=lambda o: o.path)
        },
        "questions": [q.to_dict() for q in ctx.questions],
    }


def dump_json(doc: dict[str, Any]) -> bytes:
    """decisions.json's bytes: UTF-8, with text that was not UTF-8 (a file name's stray bytes, kept as
    surrogates) written as ``\\udcXX`` escapes, which read back to the same path."""
    text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    if not text.isascii() and any("\ud800" <= ch <= "\udfff" for ch in text):
        text = json.dumps(doc, indent=2, ensure_ascii=True) + "\n"
    return text.encode("utf-8")


def _lines(q: Question) -> str:
    if not q.lines:
        return "whole file"
    return f"line {q.lines[0]}" if q.lines[0] == q.lines[1] else f"lines {q.lines[0]}–{q.lines[1]}"


def render_questions(ctx: ReportContext) -> str:
    tiers = tier_counts(ctx.questions)
    out = [
        f"# Questions: window #{ctx.window.from_pr}..#{ctx.window.to_pr}",
        "",
        f"{len(ctx.questions)} questions: **{tiers[Tier.DECIDE]} Decide** (a human must choose), "
        f"{tiers[Tier.CONFIRM]} Confirm (a default is proposed), {tiers[Tier.SETTLED]} Settled (recorded decision).",
        "",
        "Answer them in `review.html` (choose options, export decisions.json into this folder) or edit "
        "`decisions.json` directly (set `decision`, and `edit` for edited text); then run `vime-sync resolve`.",
        "Line numbers refer to the file as committed in commit 1 (with markers).",
    ]
    settled = settled_files(ctx)
    if settled:
        out += [
            "",
            f"Settled without a question ({len(settled)} files): the line merge conflicted, but no top-level "
            "statement was changed on both sides, so each took the side that changed it:",
            "",
            *settled,
        ]
    for q in ctx.questions:
        default = q.decision if q.tier == Tier.SETTLED else q.default
        if q.tier == Tier.SETTLED and q.sites and not default:
            default = "recorded per site"
        out += [
            "",
            f"## {q.id} · {q.tier} · {q.kind} · `{q.file}` {_lines(q)}",
            "",
            f"- {q.summary}",
            f"- PRs: {pr_list(q.prs)}",
            f"- Rules: {', '.join(f'`{r}`' for r in q.rules) or '-'}",
            f"- Options: {' / '.join(q.options)}; proposed: **{default or 'none (Decide)'}**",
        ]
        if q.alternative:
            out.append(f"- Upstream's version is saved at `{q.alternative}` (in this folder)")
        if q.diff:
            out.append(f"- The translated upstream diff to port is saved at `{q.diff}` (in this folder)")
        if q.sites:
            out += ["", f"Sites ({len(q.sites)}; the decision applies to all, or set one per site):", ""]
            for s in q.sites[:MAX_SITES]:
                recorded = f" · recorded: {s['decision']}" if s.get("recorded_in") else ""
                where = f"{s['file']}:{s['lines'][0]}" if s["lines"] else s["file"]
                diff = f"; diff `{s['diff']}`" if s.get("diff") else ""
                out.append(f"- `{where}` ({pr_list(s['prs'])}){recorded}: `{_one_line(s['snippet'])}`{diff}")
            if len(q.sites) > MAX_SITES:
                out.append(f"- ... {len(q.sites) - MAX_SITES} more in decisions.json")
            continue
        for side in ("ours", "base", "theirs"):
            if side in q.sides:
                out += ["", f"{side}:", "", *fenced(q.sides[side], max_lines=40)]
    return "\n".join(out) + "\n"
