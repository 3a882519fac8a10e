"""Window selection: which upstream commits and PRs a sync covers, read from first-parent history.

Merge order (first-parent of upstream main), not PR number order, is the truth: a PR numbered
inside the range may merge months later, and an older PR may merge inside it.
"""

from __future__ import annotations

import re
from pathlib import Path

from sync.gitio import git, rev_parse
from sync.model.window import PR_AT_END, UpstreamCommit, Window

_MERGE_PR = re.compile(r"^Merge pull request #(\d+)\b")


class WindowError(ValueError):
    """The requested window cannot be resolved; the message is one line with the fix."""


def pr_number(subject: str) -> int | None:
    """PR number of a commit subject: ``... (#N)`` at the end, or ``Merge pull request #N ...``."""
    m = PR_AT_END.search(subject) or _MERGE_PR.match(subject)
    return int(m.group(1)) if m else None


def first_parent_log(repo: Path, rev_range: str, with_files: bool = False) -> list[UpstreamCommit]:
    """First-parent commits of ``rev_range`` oldest first, optionally with the paths each changed."""
    fmt = "%x01%H%x00%s%x00%an%x00%ad%x00"
    args = ["log", "--first-parent", "--reverse", f"--format={fmt}", "--date=short"]
    if with_files:
        args += ["--name-only", "--no-renames", "-z"]
    out = git(repo, *args, rev_range).decode("utf-8", "replace")
    commits: list[UpstreamCommit] = []
    for rec in out.split("\x01")[1:]:
        parts = rec.split("\x00")
        sha, subject, author, date = parts[0], parts[1], parts[2], parts[3]
        files = tuple(p.strip("\n") for p in parts[4:] if p.strip("\n")) if with_files else ()
        commits.append(UpstreamCommit(sha, subject, author, date, pr_number(subject), files))
    return commits


def find_pr_commit(history: list[UpstreamCommit], number: int) -> UpstreamCommit | None:
    """The first-parent commit that merged PR ``number`` (the oldest if a number repeats)."""
    for c in history:
        if c.pr == number:
            return c
    return None


def resolve_window(
    upstream: Path,
    to_pr: int,
    from_pr: int | None = None,
    cutoff: str | None = None,
    upstream_ref: str = "HEAD",
) -> Window:
    """Resolve cutoff and tip to commits and list the window's commits; raise WindowError on bad input.

    The cutoff is, in order of precedence: ``cutoff`` (any commit-ish), or the commit of PR
    ``from_pr - 1``. ``from_pr`` is then derived from the cutoff's PR number when not given.
    """
    history = first_parent_log(upstream, upstream_ref)
    tip_commit = find_pr_commit(history, to_pr)
    if tip_commit is None:
        raise WindowError(
            f"PR #{to_pr} is not merged on the upstream's first-parent history ({upstream_ref}); "
            "check the number or fetch the upstream"
        )
    if cutoff is not None:
        cutoff_sha = rev_parse(upstream, cutoff)
        if cutoff_sha is None:
            raise WindowError(
                f"cutoff {cutoff!r} is not a commit of the upstream; give a commit id or --from"
            )
        if from_pr is None:
            own = next((c.pr for c in history if c.sha == cutoff_sha), None)
            if own is None:
                raise WindowError(f"cutoff {cutoff[:12]} carries no PR number; also give --from N")
            from_pr = own + 1
    else:
        if from_pr is None:
            raise WindowError(
                "no cutoff: give --from N (or --cutoff COMMIT), or sync once so the state file records it"
            )
        cut = find_pr_commit(history, from_pr - 1)
        if cut is None:
            raise WindowError(
                f"PR #{from_pr - 1} (the cutoff for --from {from_pr}) is not merged upstream; give --cutoff COMMIT"
            )
        cutoff_sha = cut.sha
    index = {c.sha: i for i, c in enumerate(history)}
    if cutoff_sha in index and index[cutoff_sha] >= index[tip_commit.sha]:
        raise WindowError(
            f"empty window: the cutoff {cutoff_sha[:8]} is not before PR #{to_pr} ({tip_commit.sha[:8]}); "
            "pick a later --to"
        )
    commits = first_parent_log(upstream, f"{cutoff_sha}..{tip_commit.sha}", with_files=True)
    if not commits:
        raise WindowError(f"empty window: no upstream commits between {cutoff_sha[:8]} and PR #{to_pr}")
    after_tip = history[index[tip_commit.sha] + 1 :]
    late = [c for c in after_tip if c.pr is not None and from_pr <= c.pr <= to_pr]
    before_cutoff = history[: index[cutoff_sha] + 1] if cutoff_sha in index else []
    early = [c for c in before_cutoff if c.pr is not None and from_pr <= c.pr <= to_pr]
    return Window(from_pr, to_pr, cutoff_sha, tip_commit.sha, commits, late, early)


def window_by_commit(
    upstream: Path, to_commit: str | None, from_commit: str | None = None, upstream_ref: str = "HEAD"
) -> tuple[int | None, int | None, str | None]:
    """(to_pr, from_pr, cutoff) of a window given by commits, since PR numbers do not follow merge order.

    ``to_commit`` is the window's last first-parent commit (it must carry a PR number: windows are
    named by it); ``from_commit`` its first, so the cutoff is the first-parent commit before it.
    """
    history = first_parent_log(upstream, upstream_ref)
    index = {c.sha: i for i, c in enumerate(history)}

    def on_history(rev: str, flag: str) -> int:
        sha = rev_parse(upstream, rev)
        if sha is None:
            raise WindowError(f"{flag} {rev!r} is not a commit of the upstream; give a commit id")
        if sha not in index:
            raise WindowError(
                f"{flag} {rev[:12]} is not on the first-parent history of {upstream_ref}; "
                "give the merge commit of a PR"
            )
        return index[sha]

    to_pr = cutoff = from_pr = None
    if to_commit is not None:
        tip = history[on_history(to_commit, "--to-commit")]
        if tip.pr is None:
            raise WindowError(
                f"--to-commit {tip.sha[:12]} carries no PR number; windows are named by it, give --to N"
            )
        if find_pr_commit(history, tip.pr) != tip:
            raise WindowError(f"PR #{tip.pr} was merged twice; the window cannot end at the later merge")
        to_pr = tip.pr
    if from_commit is not None:
        i = on_history(from_commit, "--from-commit")
        if i == 0:
            raise WindowError(
                f"--from-commit {from_commit[:12]} is the first upstream commit; there is no cutoff"
            )
        first, before = history[i], history[i - 1]
        cutoff = before.sha
        from_pr = before.pr + 1 if before.pr is not None else first.pr  # as --from N: cutoff #N-1
        if from_pr is None:
            raise WindowError(
                f"neither {first.sha[:12]} nor the commit before it carries a PR number; also give --from N"
            )
    return to_pr, from_pr, cutoff
