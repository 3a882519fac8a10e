"""Run the hook contracts against a worktree's code, in a subprocess, and name what broke.

The subprocess gets ``PYTHONPATH=<worktree>`` so that the worktree's code (the sync branch), not
this installation's, is what the contracts import. Contract files and the runner come from the
worktree when it has them, else from this installation (``sync.packaged``: the wheel's copies or the
checkout's).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from sync.gate.config import ContractRun
from sync.model.gate import FilePRs, GateFailure
from sync.packaged import contract_runner, contracts_dir, framework_root

INSTALL_ROOT = framework_root()
CONTRACT_DIR = "tests/contract"
RUNNER = "tools/run_contract.py"
_PATH_FLAG = re.compile(r"^--[a-z][a-z0-9-]*-path$")
_DOTTED = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b")
_VIOLATION_PREFIX = re.compile(r"^(?:[\w.]+\.)?ContractViolation: ")


class ContractSetupError(ValueError):
    """A contract that cannot even be started (missing file); the message names it."""


def _from_worktree_or_install(worktree: Path, rel: str) -> Path | None:
    if (worktree / rel).is_file():
        return worktree / rel
    if rel == RUNNER:
        installed = contract_runner()
    elif rel.startswith(f"{CONTRACT_DIR}/"):
        installed = contracts_dir() / rel.removeprefix(f"{CONTRACT_DIR}/")
    else:
        installed = INSTALL_ROOT / rel
    return installed if installed.is_file() else None


def default_runs(worktree: Path) -> list[ContractRun]:
    """vime's own contracts against vime's default hooks: no path arguments, so they share one
    subprocess (a process per file costs about 5x as much; benchmarks/bench_gate.py)."""
    directory = worktree / CONTRACT_DIR if (worktree / CONTRACT_DIR).is_dir() else contracts_dir()
    files = tuple(f"{CONTRACT_DIR}/{p.name}" for p in sorted(directory.glob("test_*_contract.py")))
    return [ContractRun(files=files)] if files else []


def carries_framework(worktree: Path) -> bool:
    """Whether the worktree has vime's framework (its hook types), which its contracts then test."""
    return (worktree / "vime" / "utils" / "types.py").is_file()


def framework_path(worktree: Path) -> tuple[list[str], str | None]:
    """What goes on PYTHONPATH: the worktree first when it carries vime's framework (its hook
    types), else this installation's framework with the worktree's plugins behind it."""
    if carries_framework(worktree):
        return [str(worktree)], None
    note = (
        f"{worktree.name} has no vime/utils/types.py: contracts ran with this installation's vime "
        f"framework ({INSTALL_ROOT}) and the worktree's plugins"
    )
    return [str(INSTALL_ROOT), str(worktree)], note


def module_file(worktree: Path, dotted: str) -> str | None:
    """The worktree file that defines ``dotted`` (a module, or an attribute of one), if any."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        base = "/".join(parts[:cut])
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if (worktree / candidate).is_file():
                return candidate
    return None


def hook_files(worktree: Path, args: tuple[str, ...]) -> list[str]:
    """Worktree files of the modules named by ``--xxx-path`` arguments."""
    files, values = [], iter(args)
    for arg in values:
        if _PATH_FLAG.match(arg):
            dotted = next(values, "")
        else:
            dotted = arg.partition("=")[2] if "-path=" in arg else ""
        found = module_file(worktree, dotted) if "." in dotted else None
        if found:
            files.append(found)
    return files


def default_hook_files(worktree: Path, contract_file: Path) -> list[str]:
    """Worktree files of the defaults a contract tests when given no path (its ``DEFAULT*`` constants)."""
    try:
        tree = ast.parse(contract_file.read_bytes())
    except SyntaxError:
        return []
    files = []
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id.startswith("DEFAULT") for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            found = module_file(worktree, node.value.value)
            if found:
                files.append(found)
    return files


def named_files(worktree: Path, text: str) -> list[str]:
    """Worktree files of the dotted names a failure message mentions (``my_pkg.rm.score``)."""
    tops = {p.name for p in worktree.iterdir() if p.is_dir()}
    files = []
    for dotted in set(_DOTTED.findall(text)):
        if dotted.split(".")[0] in tops:
            found = module_file(worktree, dotted)
            if found:
                files.append(found)
    return sorted(files)


def _junit_failures(xml_path: Path) -> list[tuple[str, str, str, str]]:
    """``(module, test name, one-line message, full text)`` of every failed or errored test case."""
    if not xml_path.is_file():
        return []
    found = []
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        for tag in ("failure", "error"):
            for node in case.findall(tag):
                message = (node.get("message") or "").strip().splitlines()
                first = next((line for line in message if line.strip()), tag)
                module = (case.get("classname") or "").rsplit(".", 1)[-1]
                found.append(
                    (module, case.get("name", "?"), _VIOLATION_PREFIX.sub("", first.strip()), node.text or "")
                )
    return found


def run_contract(worktree: Path, run: ContractRun, file_prs: FilePRs) -> tuple[list[GateFailure], str | None]:
    """Run the contract files of ``run`` in one subprocess; return their failures and a note
    about the import path used."""
    runner = _from_worktree_or_install(worktree, RUNNER)
    contract_files = {rel: _from_worktree_or_install(worktree, rel) for rel in run.files}
    missing = [rel for rel, found in contract_files.items() if found is None] + (
        [RUNNER] if runner is None else []
    )
    if missing:
        raise ContractSetupError(
            f"contract {run.label}: {', '.join(missing)} is in neither the worktree nor {INSTALL_ROOT}"
        )
    paths, note = framework_path(worktree)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [*paths, os.environ.get("PYTHONPATH")]))}
    env.pop("PYTEST_ADDOPTS", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # leave no __pycache__ in the sync worktree
    given = hook_files(worktree, run.args)
    hooks_of = {Path(p).stem: given or default_hook_files(worktree, p) for p in contract_files.values()}
    all_hooks = sorted({f for files in hooks_of.values() for f in files})
    with tempfile.TemporaryDirectory(prefix="vime-gate-") as scratch:
        xml_path = Path(scratch) / "junit.xml"
        command = [
            sys.executable,
            "-P",  # the runner's own folder (vime/ when installed) must not shadow top-level modules
            str(runner),
            *map(str, contract_files.values()),
            *run.args,
            "-q",
            f"--junitxml={xml_path}",
        ]
        try:
            done = subprocess.run(
                command, cwd=worktree, env=env, capture_output=True, text=True, timeout=run.timeout
            )
        except subprocess.TimeoutExpired:
            return [_failure(run.label, f"did not finish within {run.timeout} s", all_hooks, file_prs)], note
        if done.returncode == 0:
            return [], note
        failures = [
            _failure(
                _label(module, run),
                f"{name}: {message}",
                hooks_of.get(module, all_hooks)
                + named_files(worktree, message)
                + _files_named(text, file_prs),
                file_prs,
            )
            for module, name, message, text in _junit_failures(xml_path)
        ]
    if not failures:  # the runner refused (bad path) or pytest could not start
        output = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").splitlines()
        failures = [
            _failure(run.label, output[-1], all_hooks + _files_named(done.stderr, file_prs), file_prs)
        ]
    return failures, note


def contract_failures(
    worktree: Path, run: ContractRun, file_prs: FilePRs
) -> tuple[list[GateFailure], str | None]:
    """``run_contract``, with a run that cannot even start (a missing file) as one failure of its own."""
    try:
        return run_contract(worktree, run, file_prs)
    except ContractSetupError as exc:
        return [GateFailure(check="contract", message=str(exc), files=list(run.files))], None


def _label(module: str, run: ContractRun) -> str:
    """The failing file's name with the run's path arguments (``test_reward_contract.py --custom-rm-path ...``)."""
    return " ".join([f"{module}.py", *run.args]) if module else run.label


def _files_named(text: str, file_prs: FilePRs) -> list[str]:
    """Window files that a traceback mentions (so a failure deep in a helper still names its PR)."""
    return [path for path in file_prs if path.endswith(".py") and path in text]


def _failure(label: str, message: str, files: list[str], file_prs: FilePRs) -> GateFailure:
    return GateFailure.about("contract", f"{label}: {message}", files, file_prs)
