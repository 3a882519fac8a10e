"""What a sync window writes for its reviewers, committed on the sync branch under ``reports/<window>/``."""

from __future__ import annotations

from sync.ledger import ledger_files, merge_rows, window_rows
from sync.reports.context import ReportContext
from sync.reports.questions_md import decisions_doc, dump_json, render_questions
from sync.reports.review_page import render_review_page
from sync.reports.summary import render_summary


def report_dir_name(from_pr: int, to_pr: int) -> str:
    return f"reports/slime-{from_pr}-{to_pr}"


def build_reports(ctx: ReportContext) -> dict[str, bytes]:
    """Relative path (inside the repository) -> bytes of every report file of the window."""
    base = report_dir_name(ctx.window.from_pr, ctx.window.to_pr)
    doc = decisions_doc(ctx)
    files = {
        f"{base}/SUMMARY.md": render_summary(ctx).encode(),
        f"{base}/QUESTIONS.md": render_questions(ctx).encode(),
        f"{base}/decisions.json": dump_json(doc),
        f"{base}/review.html": render_review_page(doc).encode(),
    }
    rows = window_rows(ctx.window, ctx.name, ctx.outcomes, ctx.downstream_commits, ctx.questions)
    files |= ledger_files(merge_rows(ctx.previous_ledger, rows))
    by_path = {o.path: o for o in ctx.outcomes}
    ports = {o.upstream_path: o for o in ctx.outcomes if o.outcome == "port"}
    for q in ctx.questions:
        if q.alternative:
            source = (
                ports[q.alternative.removeprefix("alternatives/")] if q.kind == "port" else by_path[q.file]
            )
            alt = source.alternative
            if alt is not None:
                files[f"{base}/{q.alternative}"] = alt
        if q.diff:
            files[f"{base}/{q.diff}"] = q.sides.get("theirs", "").encode()
        for site in q.sites if q.kind == "port" else []:  # a port group: each file's upstream version
            alt = ports[site["upstream"]].alternative
            if site.get("alternative") and alt is not None:
                files[f"{base}/{site['alternative']}"] = alt
        for rel, text in q.attachments.items():
            files[f"{base}/{rel}"] = text.encode()
    return files


__all__ = ["ReportContext", "build_reports", "report_dir_name"]
