"""Does ``from vllm.x import y`` resolve against the installed vLLM? (module exists, name defined)

Used by ``vime-sync rules check`` for the targets of module rules and by
``tools/check_vllm_imports.py`` / the translator benchmark for every import in a translated tree.
Imports really happen (that is the truth being checked), so callers run this in a subprocess.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

ENGINE_ROOTS = ("vllm", "vllm_router")


@dataclass(frozen=True, order=True)
class ImportUse:
    path: str
    line: int
    module: str
    name: str | None  # None for ``import module``


@dataclass(frozen=True)
class Resolution:
    use: ImportUse
    ok: bool
    reason: str


def is_engine_module(module: str) -> bool:
    return module.split(".")[0] in ENGINE_ROOTS


def imports_in_source(path: str, source: str) -> list[ImportUse]:
    """Every absolute ``import vllm…`` / ``from vllm… import name`` in a module."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    uses = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            uses.extend(
                ImportUse(path, node.lineno, a.name, None) for a in node.names if is_engine_module(a.name)
            )
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and is_engine_module(node.module)
        ):
            uses.extend(
                ImportUse(path, node.lineno, node.module, a.name) for a in node.names if a.name != "*"
            )
    return uses


def imports_in_tree(root: Path) -> list[ImportUse]:
    uses: list[ImportUse] = []
    for file in sorted(root.rglob("*.py")):
        text = file.read_bytes().decode("utf-8", "replace")
        if "vllm" in text:
            uses.extend(imports_in_source(file.relative_to(root).as_posix(), text))
    return uses


def resolve(use: ImportUse) -> Resolution:
    """Import the module for real; then the name must be an attribute or a submodule of it."""
    try:
        module = importlib.import_module(use.module)
    except ModuleNotFoundError as error:
        return Resolution(use, False, f"no module {error.name!r}")
    except Exception as error:  # any import-time failure means it does not resolve
        return Resolution(use, False, f"import failed: {type(error).__name__}: {error}")
    if use.name is None or hasattr(module, use.name):
        return Resolution(use, True, "")
    try:
        importlib.import_module(f"{use.module}.{use.name}")
        return Resolution(use, True, "")
    except ImportError:
        return Resolution(use, False, f"{use.module} defines no {use.name!r}")


def resolve_in_subprocess(uses: list[ImportUse], timeout: float = 300) -> list[Resolution]:
    """Run :func:`resolve` in a fresh interpreter (vLLM imports are heavy and have side effects)."""
    if not uses:
        return []
    payload = json.dumps([asdict(use) for use in uses])
    completed = subprocess.run(
        [sys.executable, "-m", "sync.translator.vllm_imports"],
        input=payload,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    if completed.returncode != 0:
        tail = completed.stderr.strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"import checker failed: {tail[0]}")
    rows = json.loads(completed.stdout.strip().splitlines()[-1])
    return [Resolution(use, row["ok"], row["reason"]) for use, row in zip(uses, rows, strict=True)]


def vllm_installed() -> bool:
    return importlib.util.find_spec("vllm") is not None


def _main() -> None:
    uses = [ImportUse(**row) for row in json.loads(sys.stdin.read())]
    results = [resolve(use) for use in uses]
    sys.stdout.write("\n" + json.dumps([{"ok": r.ok, "reason": r.reason} for r in results]) + "\n")


if __name__ == "__main__":
    _main()
