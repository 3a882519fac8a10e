"""The gate of one followed PR: the files it changed, checked before and after it (regressions only).

A translated upstream carries failures of its own (SGLang imports no rule covers, calls vLLM does
not serve); only a failure the PR's tree has and the tree before it lacks stops follow, and it is
this PR's by construction (no bisection). Most of the gate's static checks look at one file at a
time, so a PR can only add such a failure in a file it changed: follow runs them on those files in
both trees (compile, SGLang imports, HTTP calls against vLLM's API, conflict markers; ``--vllm-*``
flags of changed scripts against the flags the whole tree defines). The ``vime-import`` check also
depends on the vime a file runs with, so it covers every file, each result kept per (vime, file)
and checked again only when either changed. ``ChangedChecks`` on every file equals the gate's
static checks (tested), at a fraction of the cost per PR. The contract runs that ``gate
--regressions`` would compare (the tree's gate.toml, or vime's own when the tree carries vime's
framework) run on both whole trees when a Python file changed. The review reports (``reports/``,
``.vime-sync/``) are not gated: they quote conflicting code on purpose.
"""

from __future__ import annotations

import ast
import contextlib
import fnmatch
import hashlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sync.conformance.imports import VimeRef
from sync.gate.config import CONFIG_PATH, load_gate_config
from sync.gate.contracts import INSTALL_ROOT
from sync.gate.regression import (
    Key,
    Probe,
    RegressionResult,
    contract_probe,
    keyed,
    render_regressions,
    tree_contract_runs,
)
from sync.gate.static_checks import check_compiles, check_conflict_markers, check_sglang_imports
from sync.gitio import BlobReader, export_tree, git, ls_tree
from sync.model.gate import GateFailure
from sync.rules import RuleSet, load_rules
from sync.textio import read_text
from sync.translator.vllm_flags import (
    VllmNotInstalled,
    check_vllm_flags,
    installed_vime_flags,
    own_vllm_flags,
    vllm_server_options,
)

REPORT_ROOTS = ("reports/", ".vime-sync/")
RULES_DIR = "translations/"


@contextlib.contextmanager
def files_of(repo: Path, rev: str, paths: list[str]) -> Iterator[Path]:
    """Just ``paths`` (those present at ``rev``) in a scratch folder: git archive, nothing left behind."""
    scratch = Path(tempfile.mkdtemp(prefix="vime-follow-gate-"))
    try:
        if paths:
            export_tree(repo, rev, scratch, paths)
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def rules_at(repo: Path, rev: str, tree: dict[str, tuple[str, str]]) -> RuleSet:
    """The rule tables the gate uses for a tree: its own ``translations/`` when it has some."""
    tables = sorted(p for p in tree if p.startswith(RULES_DIR) and p.endswith(".toml") and p.count("/") == 1)
    if not tables:
        return load_rules()
    with files_of(repo, rev, tables) as scratch:
        return load_rules(scratch / "translations")


@dataclass
class ChangedChecks:
    """The gate's static checks on some files of a revision (see the module's docstring)."""

    repo: Path
    own_by_blob: dict[str, set[str]] = field(default_factory=dict)  # Python blob -> --vllm-* flags defined
    installed: set[str] | None = None
    imports: dict[tuple[str, str, str], list[GateFailure]] = field(default_factory=dict)  # (vime, path, blob)
    refs: dict[tuple[str, str], list[VimeRef]] = field(
        default_factory=dict
    )  # (path, blob) -> vime references

    def vime_imports(self, rev: str, tree: dict[str, tuple[str, str]], files: list[str]) -> list[GateFailure]:
        """The gate's ``vime-import`` check on ``files``: a file's failures depend on it and on the vime
        it runs with (the tree's own ``vime/`` when it carries the framework, else the installed one),
        so they are kept per (that vime, path, blob); its references to vime, per (path, blob)."""
        from sync.conformance.imports import PACKAGE, file_refs
        from sync.gate.imports_check import TEXT_SUFFIXES, failures_of, surface_for

        framework = carries_framework_in(tree)
        vime = (
            sorted(f"{p} {tree[p][1]}" for p in tree if p.startswith("vime/")) if framework else ["installed"]
        )
        key = hashlib.sha256("\n".join(vime).encode("utf-8", "surrogateescape")).hexdigest()
        todo = [p for p in files if p.endswith(TEXT_SUFFIXES) and (key, p, tree[p][1]) not in self.imports]
        if todo:
            kept = list(dict.fromkeys(k for k, _p, _o in self.imports))[-1:]  # the tree before this one
            self.imports = {k: v for k, v in self.imports.items() if k[0] in kept}
            unread = [p for p in todo if (p, tree[p][1]) not in self.refs]
            package = [p for p in tree if p.startswith("vime/")] if framework else []
            with files_of(self.repo, rev, sorted(set(unread) | set(package))) as scratch:
                for p in unread:
                    text = read_text(scratch / p)
                    named = text is not None and PACKAGE in text
                    self.refs[(p, tree[p][1])] = file_refs(p, text, p.endswith(".py")) if named else []
                surface = surface_for(scratch)
                for p in todo:
                    refs = self.refs[(p, tree[p][1])]
                    found = failures_of(p, refs, surface, {}) if refs and surface is not None else []
                    self.imports[(key, p, tree[p][1])] = found
        return [f for p in files if p.endswith(TEXT_SUFFIXES) for f in self.imports[(key, p, tree[p][1])]]

    def own_flags(self, tree: dict[str, tuple[str, str]], read: BlobReader) -> set[str]:
        flags: set[str] = set()
        for path, (_mode, oid) in tree.items():
            if not path.endswith(".py"):
                continue
            if oid not in self.own_by_blob:
                try:
                    parsed = {path: ast.parse(read.read(oid))}
                except (SyntaxError, ValueError):
                    parsed = {}
                self.own_by_blob[oid] = own_vllm_flags(parsed)
            flags |= self.own_by_blob[oid]
        if not carries_framework_in(tree):  # plugins only: the installed framework's flags apply
            if self.installed is None:
                self.installed = installed_vime_flags(INSTALL_ROOT)
            flags |= self.installed
        return flags

    def __call__(self, rev: str, paths: list[str]) -> dict[Key, GateFailure]:
        tree = ls_tree(self.repo, rev)
        present = sorted(p for p in paths if p in tree and not p.startswith(REPORT_ROOTS))
        wanted = present + ([CONFIG_PATH] if CONFIG_PATH in tree else [])
        with files_of(self.repo, rev, wanted) as scratch, BlobReader(self.repo) as read:
            config = load_gate_config(scratch)

            def gated(p: str) -> bool:
                return not p.startswith(REPORT_ROOTS) and not any(
                    fnmatch.fnmatchcase(p, g) for g in config.exclude
                )

            files = [p for p in present if gated(p)]
            rules = rules_at(self.repo, rev, tree)
            failures, trees = check_compiles(scratch, [f for f in files if f.endswith(".py")], {})
            failures += check_sglang_imports(trees, rules, {})
            from sync.gate.conformance_check import (
                check_conformance,  # imports the gate's helpers: load it late
            )

            failures += check_conformance(scratch, list(trees), rules, {})[0]
            scripts = [f for f in files if f.endswith(".sh")]
            if scripts:
                with contextlib.suppress(VllmNotInstalled):
                    options = vllm_server_options()
                    own = self.own_flags(tree, read)
                    failures += check_vllm_flags(scratch, scripts, own, {}, options, rules)
            failures += check_conflict_markers(scratch, files, {})
        failures += self.vime_imports(rev, tree, sorted(p for p in tree if gated(p)))
        return keyed(failures)


def carries_framework_in(tree: dict[str, tuple[str, str]]) -> bool:
    """``carries_framework`` for a tree listing (no checkout)."""
    return "vime/utils/types.py" in tree


def changed_paths(repo: Path, before: str, after: str) -> list[str]:
    out = git(repo, "diff", "--name-only", "-z", "--no-renames", before, after)
    paths = [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]
    return [p for p in paths if not p.startswith(REPORT_ROOTS)]


@dataclass
class StepGate:
    """Judges each followed PR; remembers contract results per tree, so each PR runs them once."""

    worktree: Path
    checks: ChangedChecks | None = None
    contracts: Probe | None = None
    known: dict[str, dict[Key, GateFailure]] = field(default_factory=dict)
    files_checked: int = 0

    def __post_init__(self) -> None:
        self.checks = self.checks or ChangedChecks(self.worktree)

    def _contract_failures(self, rev: str) -> dict[Key, GateFailure]:
        if self.contracts is None:
            runs = tree_contract_runs(self.worktree)
            self.contracts = contract_probe(self.worktree, runs) if runs else (lambda _rev: {})
        listing = git(self.worktree, "ls-tree", "-r", "--full-tree", rev).decode("utf-8", "surrogateescape")
        kept = [line for line in listing.splitlines() if not line.split("\t", 1)[-1].startswith(REPORT_ROOTS)]
        key = hashlib.sha256("\n".join(kept).encode("utf-8", "surrogateescape")).hexdigest()
        if key not in self.known:
            if len(self.known) >= 4:
                del self.known[next(iter(self.known))]
            self.known[key] = self.contracts(rev)
        return self.known[key]

    def judge(self, before: str, after: str, pr: int | str) -> RegressionResult:
        """New failures in what the PR changed (each named with ``pr``), fixed and pre-existing ones."""
        assert self.checks is not None
        paths = changed_paths(self.worktree, before, after)
        result = RegressionResult(before=before, probes=2 if paths else 0)
        if not paths:
            result.notes.append("the PR changed no file outside the reports: nothing to check")
            return result
        old, now = self.checks(before, paths), self.checks(after, paths)
        if any(p.endswith(".py") for p in paths):
            old, now = old | self._contract_failures(before), now | self._contract_failures(after)
        self.files_checked += len(paths)
        for key, f in sorted(now.items()):
            if key in old:
                result.preexisting.append(f)
            else:
                f.prs = [pr]
                result.new.append(f)
        result.fixed = [f for key, f in sorted(old.items()) if key not in now]
        result.notes.append(f"static checks on the {len(paths)} file(s) the PR changed, before and after it")
        return result


def gate_files(result: RegressionResult | None, pr: int | str, why: str = "") -> dict[str, bytes]:
    """gate.json and GATE.md of one followed PR (``"mode": "follow"`` marks them as follow's verdict)."""
    if result is None:
        doc = {"mode": "follow", "passed": True, "ran": False, "note": why}
        md = f"## Gate: not run\n\n{why}\n"
    else:
        doc = {**result.to_dict(), "mode": "follow", "ran": True, "note": why}
        md = render_regressions(result).replace(
            "## Gate (regressions only)", f"## Gate of #{pr} (regressions against the tree before it)", 1
        )
    return {"gate.json": (json.dumps(doc, indent=2) + "\n").encode(), "GATE.md": md.encode()}


def verdict(result: RegressionResult | None) -> str:
    if result is None:
        return "not run"
    return "passed" if result.passed else f"failed: {len(result.new)} new"
