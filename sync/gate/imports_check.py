"""The gate's ``vime-import`` check: every ``vime.*`` import, attribute and hook path in the
worktree resolves in the vime the merge will run with (the worktree's own ``vime/`` when it has
one, else the installed vime), each failure naming the file, line and upstream PRs."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sync.conformance.imports import PACKAGE, Surface, VimeRef, check_refs, file_refs, installed_surface
from sync.model.gate import CheckSummary, FilePRs, GateFailure
from sync.textio import read_text

NAME = "vime-import"
TEXT_SUFFIXES = (".py", ".sh", ".yaml", ".yml")  # the files that can name vime


def surface_for(worktree: Path) -> Surface | None:
    """The worktree's vime when it carries the framework (as the contracts' PYTHONPATH decides),
    else the installed one."""
    from sync.gate.contracts import carries_framework

    return Surface(worktree) if carries_framework(worktree) else installed_surface()


def check_vime_imports(
    worktree: Path, files: Iterable[str], file_prs: FilePRs
) -> tuple[list[GateFailure], CheckSummary]:
    surface = surface_for(worktree)
    if surface is None:
        return [], CheckSummary(NAME, "skipped", 0, "no vime package in the worktree or installed")
    failures, checked = [], 0
    for rel in sorted(files):
        if not rel.endswith(TEXT_SUFFIXES):
            continue
        text = read_text(worktree / rel)
        if text is None or PACKAGE not in text:
            continue
        checked += 1
        failures += failures_of(rel, file_refs(rel, text, rel.endswith(".py")), surface, file_prs)
    where = "the worktree's vime" if surface.root == worktree else f"the installed vime ({surface.root})"
    note = f"{checked} file(s) naming vime, against {where}"
    return failures, CheckSummary(NAME, "failed" if failures else "passed", checked, note)


def failures_of(rel: str, refs: list[VimeRef], surface: Surface, file_prs: FilePRs) -> list[GateFailure]:
    """The check's failures for one file whose references are known (``follow`` keeps them per blob)."""
    return [
        GateFailure.about(NAME, f"{rel}:{f.line}: {f.message}", [rel], file_prs, line=f.line)
        for f in check_refs(rel, refs, surface)
    ]
