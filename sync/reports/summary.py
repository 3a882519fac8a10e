"""SUMMARY.md: the window's PRs with their disposition, every file with its outcome and PRs, and
translation statistics (what was converted, what was left), as HIPIFY ends a run."""

from __future__ import annotations

from collections import Counter

from sync.markdown import cell, pr_list, table
from sync.model.outcome import Outcome
from sync.reports.context import ReportContext
from sync.reports.questions import tier_counts

OUTCOME_ORDER = tuple(Outcome)
OUTCOME_MEANING: dict[Outcome, str] = {
    Outcome.THEIRS: "downstream untouched since the last sync: taken exactly as translated upstream",
    Outcome.CLEAN: "both sides changed, merged line by line without conflict",
    Outcome.STRUCTURAL: "line conflict settled per top-level statement: none changed on both sides (listed below)",
    Outcome.UNCHANGED: "no effect downstream (translation identical, or already absent)",
    Outcome.CONFLICT: "diff3 conflict markers left in the file (questions)",
    Outcome.ADD_ADD: "added on both sides with different content (markers, questions)",
    Outcome.NEW: "new to the downstream",
    Outcome.DELETED: "deleted upstream, untouched downstream: deleted",
    Outcome.MODIFY_DELETE: "deleted on one side, changed on the other (question; downstream state kept)",
    Outcome.BINARY: "binary changed on both sides (question; ours kept)",
    Outcome.PORT: "vime-owned or never in vime: nothing lands; a port request with the translated diff (question)",
    Outcome.NOT_MIRRORED: "the rules (or the layout's ignore) do not mirror this upstream path: listed, not merged",
    Outcome.LINE_ENDINGS: "one side converted CRLF/LF: merged, written with that side's line endings (question)",
    Outcome.MODE: "upstream changed only the executable bit: taken (question)",
}


def outcome_counts(ctx: ReportContext) -> dict[str, int]:
    counts = Counter(o.outcome for o in ctx.outcomes)
    result = {k: counts.get(k, 0) for k in OUTCOME_ORDER}
    result["renamed"] = sum(1 for o in ctx.outcomes if o.renamed_from)
    return result


def render_summary(ctx: ReportContext) -> str:
    w = ctx.window
    counts = outcome_counts(ctx)
    tiers = tier_counts(ctx.questions)
    lines = [
        f"# slime → vime sync: window #{w.from_pr}..#{w.to_pr}",
        "",
        f"- Upstream cutoff `{w.cutoff[:10]}` → tip `{w.tip[:10]}` (PR #{w.to_pr}); "
        f"{len(w.commits)} first-parent commits, {len(w.prs)} merged PRs, {len(w.direct_pushes)} direct pushes.",
        f"- Branch `{ctx.branch}`; commit 1 keeps diff3 conflict markers as the review queue.",
        f"- Review queue: **{tiers['Decide']} Decide**, {tiers['Confirm']} Confirm, {tiers['Settled']} Settled "
        "(see QUESTIONS.md or open review.html), then run `vime-sync resolve`.",
        "",
        "## Outcomes",
        "",
        *table(
            ["outcome", "files", "meaning"],
            [[k, counts[k], OUTCOME_MEANING[k]] for k in OUTCOME_ORDER]
            + [["renamed", counts["renamed"], "followed an upstream rename (downstream edits moved along)"]],
        ),
        "",
        *render_settled(ctx),
        "## Pull requests in merge order",
        "",
    ]
    rows = []
    for c in w.commits:
        if c.pr is None:
            disp = "direct push (no PR number)"
        elif c.pr < w.from_pr:
            disp = "in window (numbered below the range)"
        elif c.pr > w.to_pr:
            disp = "in window (numbered above the range)"
        else:
            disp = "in window"
        rows.append([f"#{c.pr}" if c.pr else c.sha[:8], c.title, c.author, c.date, len(c.files), disp])
    lines += table(["PR", "title", "author", "date", "files", "disposition"], rows)
    lines += ["", "### Numbered inside the range but merged later (not in this window)", ""]
    if w.late:
        lines += [f"- #{c.pr} {cell(c.title)} (merged {c.date}, {c.sha[:8]})" for c in w.late]
    else:
        lines.append("- none")
    lines += ["", "### Numbered inside the range but merged before the cutoff (already in the base)", ""]
    if w.early:
        lines += [f"- #{c.pr} {cell(c.title)} (merged {c.date}, {c.sha[:8]})" for c in w.early]
    else:
        lines.append("- none")
    lines += ["", "## Files", ""]
    file_rows = []
    for o in sorted(ctx.outcomes, key=lambda o: o.path):
        up = o.upstream_path
        note = o.note
        if o.renamed_from:
            note = f"renamed from `{o.renamed_from}`" + (f"; {note}" if note else "")
        if o.conflicts:
            note = f"{o.conflicts} conflict hunk(s)" + (f"; {note}" if note else "")
        file_rows.append([f"`{o.path}`", f"`{up}`", o.outcome, pr_list(ctx.prs_for(o)), note])
    lines += table(["file (vime)", "upstream", "outcome", "PRs", "note"], file_rows)
    lines += ["", *render_translation_stats(ctx)]
    if ctx.timings:
        lines += ["", "## Stage times (`--timings`; this section differs from run to run)", ""]
        lines += table(["stage", "seconds"], [[name, f"{s:.2f}"] for name, s in ctx.timings.items()])
        lines.append("\nLater stages (reports, worktree, commit) are timed on the console.")
    return "\n".join(lines) + "\n"


def settled_files(ctx: ReportContext) -> list[str]:
    """One line per file the structure-aware pass settled without a question: what each side changed."""
    return [
        f"- `{o.path}` ({pr_list(ctx.prs_for(o))}): {cell(o.note)}"
        for o in sorted(ctx.outcomes, key=lambda o: o.path)
        if o.outcome == Outcome.STRUCTURAL
    ]


def render_settled(ctx: ReportContext) -> list[str]:
    files = settled_files(ctx)
    hunks = sum(o.structural_hunks for o in ctx.outcomes if o.outcome == Outcome.STRUCTURAL)
    if not files:
        return ["Structure-aware pass: no line conflict was settled per top-level statement.", ""]
    return [
        "## Settled per top-level statement (no question asked)",
        "",
        f"The line merge left {hunks} conflict hunk(s) in these {len(files)} files; each top-level statement "
        "(function, class, call, loop, try block, assignment, import) was changed on one side only, so each "
        "took the changed side's version. Review them like clean merges.",
        "",
        *files,
        "",
    ]


def render_translation_stats(ctx: ReportContext) -> list[str]:
    kinds: Counter[str] = Counter()
    applied: Counter[str] = Counter()
    questioned: Counter[str] = Counter()
    unsupported: Counter[str] = Counter()
    unmapped: list[tuple[str, int, str]] = []
    parse_errors: list[tuple[str, str]] = []
    findings: list[tuple[str, tuple[int, str, str, str, str]]] = []
    for o in ctx.outcomes:
        t = o.theirs
        if t is None:
            continue
        findings += [(o.path, f) for f in t.findings]
        kinds[t.kind] += 1
        questioned_here = set(t.questioned)
        applied.update(rid for rid, line in t.applied if (rid, line) not in questioned_here)
        questioned.update(rid for rid, _ in questioned_here)
        unsupported.update(rid for rid, _, _ in t.unsupported)
        unmapped += [(o.path, line, snip) for _, line, snip in t.unmapped]
        if t.parse_error:
            parse_errors.append((o.path, t.parse_error))
    lines = [
        "## Translation statistics (upstream tip side)",
        "",
        "Files translated by kind: "
        + (", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none")
        + ".",
        f"Rule applications: {sum(applied.values())} ({len(applied)} distinct rules), not counting "
        f"{sum(questioned.values())} on lines a conformance finding questions; "
        f"`unsupported` hits: {sum(unsupported.values())}; unmapped references: {len(unmapped)}; "
        f"files that failed to parse: {len(parse_errors)}; conformance findings (HTTP calls that do "
        f"not match vLLM's API: questions, not conversions): {len(findings)}.",
        "",
    ]
    if findings:
        lines += ["### Conformance findings", ""]
        lines += [f"- `{p}`:{f[0]} `{f[1]}`: {cell(f[3])} ({f[4]})" for p, f in findings]
        lines.append("")
    if applied:
        lines += table(
            ["rule", "applications"],
            [[f"`{r}`", n] for r, n in sorted(applied.items(), key=lambda x: (-x[1], x[0]))],
        )
        lines.append("")
    if unsupported:
        lines += ["### `unsupported` rule hits", ""]
        lines += table(["rule", "hits"], [[f"`{r}`", n] for r, n in sorted(unsupported.items())])
        lines.append("")
    lines += ["### Unmapped references", ""]
    lines += [f"- `{p}`:{line} `{cell(s.strip())}`" for p, line, s in unmapped] or ["- none"]
    if parse_errors:
        lines += ["", "### Upstream files that failed to parse (left untranslated)", ""]
        lines += [f"- `{p}`: {cell(err)}" for p, err in parse_errors]
    return lines
