"""Commit messages of a sync branch: counts by outcome and the PR list, so ``git log`` is a report too."""

from __future__ import annotations

from sync.reports.questions import Question, tier_counts
from sync.window.filemerge import FileOutcome
from sync.window.history import UpstreamCommit, Window


def outcome_totals(outcomes: list[FileOutcome]) -> dict[str, int]:
    """The headline counts: clean merges, files with markers, new, deleted, not mirrored, and the rest."""

    def n(*kinds: str) -> int:
        return sum(1 for o in outcomes if o.outcome in kinds)

    return {
        "clean": n("theirs", "clean", "structural", "unchanged"),
        "conflict": n("conflict", "add_add"),
        "new": n("new"),
        "deleted": n("deleted"),
        "not_mirrored": n("not_mirrored"),
        "port": n("port"),
        "modify_delete": n("modify_delete"),
        "binary": n("binary"),
        "renamed": sum(1 for o in outcomes if o.renamed_from),
        "structural": n("structural"),
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
        f"sync(slime #{window.from_pr}..#{window.to_pr}): 3-way merge",
        "",
        f"ours = vime, base = translate(slime {window.cutoff[:10]}), theirs = translate(slime {window.tip[:10]}).",
        f"{t['clean']} clean merges ({t['structural']} settled per definition) · {t['conflict']} files with "
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
    return "\n".join(lines) + "\n"


def per_pr_message(window: Window, index: int, commit: UpstreamCommit, outcomes: list[FileOutcome]) -> str:
    t = outcome_totals(outcomes)
    ref = f"#{commit.pr}" if commit.pr is not None else commit.sha[:8]
    return (
        f"sync(slime #{window.from_pr}..#{window.to_pr}) {index}/{len(window.commits)}: {ref} {commit.title}\n\n"
        f"Upstream {commit.sha[:10]} by {commit.author} ({commit.date}). Window so far: {t['clean']} clean, "
        f"{t['conflict']} with markers, {t['new']} new, {t['deleted']} deleted.\n"
    )


def resolve_message(window_name: str, applied: dict[str, int], markers_left: int) -> str:
    parts = ", ".join(f"{n} {k}" for k, n in sorted(applied.items())) or "nothing"
    return (
        f"sync({window_name.replace('slime-', 'slime #').replace('-', '..#')}): resolve\n\n"
        f"Applied decisions: {parts}. Conflict markers left: {markers_left}.\n"
        "Decisions are recorded in .vime-sync/decisions.json and re-applied when the same conflict returns.\n"
    )
