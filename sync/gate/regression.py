"""The gate in regression-only mode: fail on what the window broke, not on what was broken before.

The same static checks and hook contracts run on the downstream as it was before the window (the
sync branch's base) and on the sync worktree. A failure in both is pre-existing (kept as a count
and a list); one only after the window is new, and its PR is found by bisecting the ``--per-pr``
commits of the branch (the first step whose tree has the failure); one only before is fixed. Failures are compared by
check, files and message with line numbers left out, so a shifted line is still the same failure.
Writes ``gate.json`` and ``GATE.md`` (verdict: passed when nothing is new).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sync.gate.config import ContractRun, load_gate_config
from sync.gitio import GitError, export_tree, git_text
from sync.model.gate import GateFailure, GateResult, pr_label, prs_for
from sync.model.names import SYNC_SUBJECT_PREFIX, parse_per_pr_subject

if TYPE_CHECKING:
    from sync.rules import RuleSet

_LINE = re.compile(r"\b(line|lines) \d+(\s*[-–]\s*\d+)?")
_AT_LINE = re.compile(r"(\S):\d+\b")  # path:LINE

Key = tuple[str, tuple[str, ...], str]
Probe = Callable[[str], dict[Key, GateFailure]]


def failure_key(f: GateFailure) -> Key:
    """A failure's identity across trees: line numbers dropped; a contract failure's files are left
    out too, since they are the Python files the compared trees changed (they differ from tree to
    tree), not where it fails: the same contract error before and after is pre-existing."""
    files = () if f.check == "contract" else tuple(sorted(f.files))
    return (f.check, files, _AT_LINE.sub(r"\1:N", _LINE.sub(r"\1 N", f.message)))


def keyed(failures: list[GateFailure]) -> dict[Key, GateFailure]:
    """Failures by key; the same failure twice in a file (at two lines) stays two, numbered by order."""
    out: dict[Key, GateFailure] = {}
    for f in sorted(failures, key=lambda f: (f.check, f.files, f.line or 0, f.message)):
        check, files, message = failure_key(f)
        n = sum(1 for k in out if k[:2] == (check, files) and k[2].rsplit(" #", 1)[0] == message)
        out[(check, files, f"{message} #{n + 1}")] = f
    return out


@dataclass
class Step:
    """One ``--per-pr`` commit of the sync branch: the tree after upstream commit ``pr`` (in merge order)."""

    pr: int | str
    commit: str


@dataclass
class RegressionResult:
    new: list[GateFailure] = field(default_factory=list)  # prs: the PR that introduced it (bisected)
    fixed: list[GateFailure] = field(default_factory=list)
    preexisting: list[GateFailure] = field(default_factory=list)
    before: str = ""
    probes: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.new

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": "regressions",
            "passed": self.passed,
            "before": self.before,
            "new": [asdict(f) for f in self.new],
            "fixed": [asdict(f) for f in self.fixed],
            "preexisting_count": len(self.preexisting),
            "preexisting": [asdict(f) for f in self.preexisting],
            "probes": self.probes,
            "notes": list(self.notes),
        }


def per_pr_steps(worktree: Path, before: str) -> list[Step]:
    """The branch's per-PR commits after ``before``, oldest first (empty when the window ran without --per-pr)."""
    out = git_text(worktree, "log", "--reverse", "--first-parent", "--format=%H%x00%s", f"{before}..HEAD")
    steps = []
    for line in out.splitlines():
        sha, _, subject = line.partition("\0")
        parsed = parse_per_pr_subject(subject)
        if parsed is not None:
            steps.append(Step(parsed.label, sha))
    return steps


def branch_base(worktree: Path) -> str:
    """The downstream commit the sync branch started from: first parent of its first sync commit."""
    out = git_text(worktree, "log", "--reverse", "--first-parent", "--format=%H%x00%s", "HEAD")
    for line in out.splitlines():
        sha, _, subject = line.partition("\0")
        if subject.startswith(SYNC_SUBJECT_PREFIX):
            return sha + "^"
    raise ValueError(f"{worktree}: no sync commit on this branch; pass --before REV")


@contextmanager
def checkout(repo: Path, rev: str) -> Iterator[Path]:
    """``rev``'s tree in a scratch folder (git archive: no worktree, no hooks, nothing left behind)."""
    scratch = Path(tempfile.mkdtemp(prefix="vime-gate-"))
    try:
        export_tree(repo, rev, scratch)
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def static_probe(repo: Path, rules: RuleSet | None = None) -> Probe:
    """Run the static checks on the tree of a revision; failures by key."""
    from sync.gate.static import run_static_checks

    def probe(rev: str) -> dict[Key, GateFailure]:
        with checkout(repo, rev) as tree:
            result = GateResult()
            run_static_checks(tree, {}, load_gate_config(tree), result, rules)
        return keyed(result.failures)

    return probe


def contract_probe(repo: Path, runs: list[ContractRun]) -> Probe:
    """Run the contract ``runs`` (the worktree's gate.toml, the same for every tree) on a revision's tree.

    Each tree uses its own contract files where it has them. The scratch folder's path is taken
    out of the messages, so the same failure in two trees has the same key.
    """
    from sync.gate.contracts import contract_failures

    def probe(rev: str) -> dict[Key, GateFailure]:
        with checkout(repo, rev) as tree:
            failures = [f for run in runs for f in contract_failures(tree, run, {})[0]]
            for f in failures:
                f.message = f.message.replace(f"{tree}/", "").replace(str(tree), ".")
        return keyed(failures)

    return probe


def tree_contract_runs(repo: Path) -> list[ContractRun]:
    """The contract runs whose result can differ between trees of ``repo``: its gate.toml's, or vime's
    defaults when the tree carries vime's framework or contract files; none when the defaults would
    only test this installation's hooks (the same answer for every tree)."""
    from sync.gate.contracts import CONTRACT_DIR, carries_framework, default_runs

    configured = load_gate_config(repo).contracts
    if configured:
        return configured
    if carries_framework(repo) or (repo / CONTRACT_DIR).is_dir():
        return default_runs(repo)
    return []


def gate_probe(repo: Path, runs: list[ContractRun], rules: RuleSet | None = None) -> Probe:
    """The static checks and the contract ``runs`` on one tree."""
    static = static_probe(repo, rules)
    if not runs:
        return static
    run_contracts = contract_probe(repo, runs)
    return lambda rev: static(rev) | run_contracts(rev)


def bisect(steps: list[Step], key: Key, probe: Callable[[int], set[Key]]) -> Step | None:
    """The first step whose tree has ``key`` (assumes once in, it stays: the usual bisection bet)."""
    lo, hi = 0, len(steps) - 1
    if hi < 0 or key not in probe(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if key in probe(mid):
            hi = mid
        else:
            lo = mid + 1
    return steps[lo]


def regression_gate(
    worktree: Path,
    before: str | None = None,
    file_prs: dict[str, list[int | str]] | None = None,
    *,
    probe: Probe | None = None,
    contracts: bool = True,
    on_step: Callable[[str], None] | None = None,
) -> RegressionResult:
    """Compare the checks (static, and the contracts unless ``contracts`` is False) before the window
    with the worktree's HEAD; bisect each new failure."""
    worktree = Path(worktree)
    on_step = on_step or (lambda _s: None)
    before = before or branch_base(worktree)
    result = RegressionResult(before=before)
    if probe is None:
        runs = tree_contract_runs(worktree) if contracts else []
        if contracts and not runs:
            result.notes.append(
                "contracts not compared: no [[contract]] in .vime-sync/gate.toml and no vime framework in "
                "the tree, so they would test this installation's hooks only (the plain gate runs them)"
            )
        probe = gate_probe(worktree, runs)
    on_step(f"checks before the window ({before[:12]})")
    old = probe(before)
    on_step("checks after the window")
    now = probe("HEAD")
    result.probes = 2
    steps = per_pr_steps(worktree, before)
    seen: dict[int, set[Key]] = {}

    def at(i: int) -> set[Key]:
        if i not in seen:
            on_step(f"bisect: step {i + 1}/{len(steps)} ({pr_label(steps[i].pr)})")
            seen[i] = set(probe(steps[i].commit))
            result.probes += 1
        return seen[i]

    if not steps:
        result.notes.append("no --per-pr commits on this branch: new failures name the PRs of their files")
    for key, f in sorted(now.items()):
        if key in old:
            result.preexisting.append(f)
            continue
        step = bisect(steps, key, at) if steps else None
        if step is not None:
            f.prs = [step.pr]
        else:
            f.prs = prs_for(f.files, file_prs or {})
            if steps:
                result.notes.append(
                    f"{f.message}: not in any per-PR step (appeared in resolve); PRs of its files"
                )
        result.new.append(f)
    result.fixed = [f for key, f in sorted(old.items()) if key not in now]
    return result


def render_regressions(r: RegressionResult) -> str:
    verdict = "PASSED" if r.passed else f"FAILED ({len(r.new)} new failure(s))"
    lines = [
        f"## Gate (regressions only): {verdict}",
        "",
        f"Compared with the downstream before the window (`{r.before[:12]}`): {len(r.new)} new, "
        f"{len(r.fixed)} fixed, {len(r.preexisting)} pre-existing; {r.probes} trees checked.",
    ]
    for title, items, with_pr in (("New (caused by the window)", r.new, True), ("Fixed by the window", r.fixed, False),
                                  ("Pre-existing (not counted)", r.preexisting, False)):  # fmt: skip
        if not items:
            continue
        lines += ["", f"### {title}", ""]
        for f in items:
            files = ", ".join(f"`{x}`" for x in f.files) or "-"
            pr = f"; PR: {', '.join(pr_label(p) for p in f.prs) or 'unknown'}" if with_pr else ""
            lines.append(f"- **{f.check}**: {f.message} ({files}{pr})")
    if r.notes:
        lines += ["", "### Notes", ""] + [f"- {n}" for n in r.notes]
    return "\n".join(lines) + "\n"


def write_regressions(r: RegressionResult, report_dir: Path) -> None:
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "gate.json").write_text(json.dumps(r.to_dict(), indent=2) + "\n", encoding="utf-8")
    (report_dir / "GATE.md").write_text(render_regressions(r), encoding="utf-8")


def keep_regressions(
    worktree: Path,
    file_prs: dict[str, list[int | str]],
    result: GateResult,
    rules: RuleSet | None = None,
    on_step: Callable[[str], None] | None = None,
) -> RegressionResult | None:
    """``[static] mode = "regressions"``: keep only the static failures the window introduced (each
    with its bisected PR) in ``result``; pre-existing and fixed ones become notes."""
    try:
        before = branch_base(worktree)
    except (ValueError, GitError):
        result.notes.append("regressions mode: no sync commit on this branch, so every static failure counts")
        return None
    reg = regression_gate(worktree, before, file_prs, probe=static_probe(worktree, rules), on_step=on_step)
    result.failures = list(reg.new)
    failed = {f.check for f in reg.new}
    for check in result.checks:
        if check.status == "failed" and check.name not in failed:
            check.status = "passed"
        old = sum(1 for f in reg.preexisting if f.check == check.name)
        if old:
            check.note = f"{check.note}; {old} pre-existing not counted".lstrip("; ")
    result.notes.append(
        f"regressions only (against {before[:12]}): {len(reg.new)} new, {len(reg.fixed)} fixed, "
        f"{len(reg.preexisting)} pre-existing static failures; {reg.probes} trees checked"
    )
    result.notes += reg.notes
    return reg
