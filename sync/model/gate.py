"""What the gate found: data only, so every check can be tested without a repository."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

PR = int | str  # a PR number, or the short sha of a direct push (no PR)
FilePRs = dict[str, list[PR]]  # worktree path -> the window's PRs that touched it


@dataclass
class GateFailure:
    """One thing that blocks the merge, with the files and the upstream PRs behind it."""

    check: str  # "compile", "sglang-import", "vllm-flag", "conflict-marker", "contract"
    message: str  # one line: what is wrong and how to fix it
    files: list[str] = field(default_factory=list)  # worktree-relative paths
    prs: list[PR] = field(default_factory=list)  # upstream PRs (or direct-push shas) that touched those files
    line: int | None = None

    @classmethod
    def about(
        cls, check: str, message: str, files: list[str], file_prs: FilePRs, line: int | None = None
    ) -> GateFailure:
        """A failure about ``files`` (sorted, each once), naming every window PR that touched them."""
        files = sorted(dict.fromkeys(files))
        return cls(check=check, message=message, files=files, prs=prs_for(files, file_prs), line=line)

    def describe(self) -> str:
        where = ", ".join(f"{f}:{self.line}" if self.line and len(self.files) == 1 else f for f in self.files)
        prs = ", ".join(pr_label(pr) for pr in self.prs) if self.prs else "no PR in the window"
        return f"[{self.check}] {self.message} (files: {where or '-'}; PRs: {prs})"


@dataclass
class CheckSummary:
    """How one check went: ``passed``, ``failed`` or ``skipped`` (with why), and how much it looked at."""

    name: str
    status: str
    checked: int = 0
    note: str = ""


@dataclass
class GateResult:
    """The gate's verdict. ``passed`` is true only when no check failed."""

    failures: list[GateFailure] = field(default_factory=list)
    checks: list[CheckSummary] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def prs(self) -> list[PR]:
        """Every PR named by a failure: numbers ascending, then direct-push shas."""
        return sorted({pr for failure in self.failures for pr in failure.prs}, key=_pr_order)

    def to_dict(self) -> dict:
        return {
            "passed": self.passed,
            "prs": self.prs,
            "failures": [asdict(f) for f in self.failures],
            "checks": [asdict(c) for c in self.checks],
            "notes": list(self.notes),
        }


def prs_for(files: list[str], file_prs: dict[str, list[PR]]) -> list[PR]:
    """The PRs that touched any of ``files``, each once: numbers ascending, then direct-push shas."""
    return sorted({pr for path in files for pr in file_prs.get(path, [])}, key=_pr_order)


def pr_label(pr: PR) -> str:
    """``#116`` for a PR, the short sha for a direct push."""
    return f"#{pr}" if isinstance(pr, int) else str(pr)


def _pr_order(pr: PR) -> tuple[int, int, str]:
    return (0, pr, "") if isinstance(pr, int) else (1, 0, str(pr))
