"""What the gate found: data only, so every check can be tested without a repository."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class GateFailure:
    """One thing that blocks the merge, with the files and the upstream PRs behind it."""

    check: str  # "compile", "sglang-import", "vllm-flag", "conflict-marker", "contract"
    message: str  # one line: what is wrong and how to fix it
    files: list[str] = field(default_factory=list)  # worktree-relative paths
    prs: list[int] = field(default_factory=list)  # upstream PRs in the window that touched those files
    line: int | None = None

    def describe(self) -> str:
        where = ", ".join(f"{f}:{self.line}" if self.line and len(self.files) == 1 else f for f in self.files)
        prs = ", ".join(f"#{pr}" for pr in self.prs) if self.prs else "no PR in the window"
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
    def prs(self) -> list[int]:
        """Every PR named by a failure, sorted."""
        return sorted({pr for failure in self.failures for pr in failure.prs})

    def to_dict(self) -> dict:
        return {
            "passed": self.passed,
            "prs": self.prs,
            "failures": [asdict(f) for f in self.failures],
            "checks": [asdict(c) for c in self.checks],
            "notes": list(self.notes),
        }


def prs_for(files: list[str], file_prs: dict[str, list[int]]) -> list[int]:
    """The PRs that touched any of ``files``, sorted, each once."""
    return sorted({pr for path in files for pr in file_prs.get(path, [])})
