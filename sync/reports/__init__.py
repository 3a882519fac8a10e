"""What a sync window writes for its reviewers, committed on the sync branch under ``reports/<window>/``."""

from __future__ import annotations

from sync.ledger import ledger_files, merge_rows, window_rows
from sync.model.names import report_dir
from sync.model.outcome import Outcome
from sync.model.question import QuestionKind
from sync.reports.context import ReportContext
from sync.reports.questions_md import decisions_doc, dump_json, render_questions
from sync.reports.review_page import render_review_page
from sync.reports.summary import render_summary
from sync.textio import to_utf8


def build_reports(ctx: ReportContext) -> dict[str, bytes]:
    """Relative path (inside the repository) -> bytes of every report file of the window."""
    base = report_dir(ctx.window.from_pr, ctx.window.to_pr)
    doc = decisions_doc(ctx)
    files = {
        f"{base}/SUMMARY.md": to_utf8(render_summary(ctx)),
        f"{base}/QUESTIONS.md": to_utf8(render_questions(ctx)),
        f"{base}/decisions.json": dump_json(doc),
        f"{base}/review.html": to_utf8(render_review_page(doc)),
    }
    rows = window_rows(ctx.window, ctx.name, ctx.outcomes, ctx.downstream_commits, ctx.questions)
    files |= ledger_files(merge_rows(ctx.previous_ledger, rows))
    by_path = {o.path: o for o in ctx.outcomes}
    ports = {o.upstream_path: o for o in ctx.outcomes if o.outcome == Outcome.PORT}
    for q in ctx.questions:
        if q.alternative:
            source = (
                ports[q.alternative.removeprefix("alternatives/")]
                if q.kind == QuestionKind.PORT
                else by_path[q.file]
            )
            alt = source.alternative
            if alt is not None:
                files[f"{base}/{q.alternative}"] = alt
        if q.diff:
            files[f"{base}/{q.diff}"] = to_utf8(q.sides.get("theirs", ""))
        for site in (
            q.sites if q.kind == QuestionKind.PORT else []
        ):  # a port group: each file's upstream version
            alt = ports[site["upstream"]].alternative
            if site.get("alternative") and alt is not None:
                files[f"{base}/{site['alternative']}"] = alt
        for rel, text in q.attachments.items():
            files[f"{base}/{rel}"] = to_utf8(text)
    return files


__all__ = ["ReportContext", "build_reports"]
