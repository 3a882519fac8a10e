"""Commit messages of a sync branch: counts by outcome and the PR list, so ``git log`` is a report too."""

from __future__ import annotations

from sync.merge.filemerge import FileOutcome
from sync.model.names import label_of_name, merge_subject, per_pr_subject, resolve_subject, window_label
from sync.model.outcome import CLEAN_MERGES, WITH_MARKERS, Outcome
from sync.reports.questions import Question, tier_counts
from sync.window.history import UpstreamCommit, Window


def outcome_totals(outcomes: list[FileOutcome]) -> dict[str, int]:
    """The headline counts: clean merges, files with markers, new, deleted, not mirrored, and the rest."""

    def n(*kinds: Outcome) -> int:
        return sum(1 for o in outcomes if o.outcome in kinds)

    return {
        "clean": n(*CLEAN_MERGES),
        "conflict": n(*WITH_MARKERS),
        "new": n(Outcome.NEW),
        "deleted": n(Outcome.DELETED),
        "not_mirrored": n(Outcome.NOT_MIRRORED),
        "port": n(Outcome.PORT),
        "modify_delete": n(Outcome.MODIFY_DELETE),
        "binary": n(Outcome.BINARY),
        "renamed": sum(1 for o in outcomes if o.renamed_from),
        "structural": n(Outcome.STRUCTURAL),
    }


def _pr_line(c: UpstreamCommit) -> str:
    ref = f"#{c.pr}" if c.pr is not None else f"{c.sha[:8]} (direct push)"
    return f"- {ref} {c.title} ({c.author}, {c.date})"


def merge_message(
    window: Window, outcomes: list[FileOutcome], questions: list[Question], report_dir: str
) -> str:
    t = outcome_totals(outcomes)
    tiers = tier_counts(questions)
    lines = [
        merge_subject(window_label(window.from_pr, window.to_pr)),
        "",
        f"ours = vime, base = translate(slime {window.cutoff[:10]}), theirs = translate(slime {window.tip[:10]}).",
        f"{t['clean']} clean merges · {t['structural']} settled per top-level statement (listed in "
        f"{report_dir}/SUMMARY.md) · {t['conflict']} files with "
        f"conflict markers · {t['new']} new · {t['deleted']} deleted · {t['renamed']} renamed · "
        f"{t['modify_delete']} modify/delete · {t['binary']} binary · {t['port']} port requests · "
        f"{t['not_mirrored']} not mirrored.",
        f"Questions: {tiers['Decide']} Decide, {tiers['Confirm']} Confirm, {tiers['Settled']} Settled "
        f"(see {report_dir}/QUESTIONS.md). Conflict markers are kept on purpose: they are the review queue.",
        "",
        f"{len(window.prs)} PRs and {len(window.direct_pushes)} direct pushes in merge order:",
        *(_pr_line(c) for c in window.commits),
    ]
    if window.late:
        lines += ["", "Numbered inside the range but merged later (not in this window): "
                  + ", ".join(f"#{c.pr}" for c in window.late)]  # fmt: skip
    if window.early:
        lines += ["", "Numbered inside the range but merged before the cutoff (already in the base, not in "
                  "this window): " + ", ".join(f"#{c.pr}" for c in window.early)]  # fmt: skip
    return "\n".join(lines) + "\n"


def per_pr_message(window: Window, index: int, commit: UpstreamCommit, outcomes: list[FileOutcome]) -> str:
    t = outcome_totals(outcomes)
    subject = per_pr_subject(
        window.from_pr, window.to_pr, index, len(window.commits), commit.pr, commit.sha, commit.title
    )
    return (
        f"{subject}\n\n"
        f"Upstream {commit.sha[:10]} by {commit.author} ({commit.date}). Window so far: {t['clean']} clean, "
        f"{t['structural']} settled per top-level statement, "
        f"{t['conflict']} with markers, {t['new']} new, {t['deleted']} deleted.\n"
    )


def resolve_message(window_name: str, applied: dict[str, int], markers_left: int) -> str:
    parts = ", ".join(f"{n} {k}" for k, n in sorted(applied.items())) or "nothing"
    return (
        f"{resolve_subject(label_of_name(window_name))}\n\n"
        f"Applied decisions: {parts}. Conflict markers left: {markers_left}.\n"
        "Decisions are recorded in .vime-sync/decisions.json and re-applied when the same conflict returns.\n"
    )
