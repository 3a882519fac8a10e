"""Run a slime-style launch script with its launch stubbed, and capture the trainer's command line.

slime's recipes are bash scripts that clean up old processes, start Ray, then
``ray job submit ... -- python3 train.py ARGS``. To see what such a script would hand to
``train.py`` without running anything, it runs here with stub executables first on ``PATH``: ``ray``
records the command after ``--``; ``python``/``python3`` record a ``train.py`` / ``train_async.py``
call and do nothing else; ``pkill``, ``sleep``, ``ssh``, ``pip``, ``hf``, ``curl`` ... only log
themselves; ``nvidia-smi`` answers as a node of ``gpus`` GPUs (the machine the recipe was written
for); ``mkdir`` makes folders only inside the scratch folder. Real shell built-ins and text tools
(``awk``, ``cat``, ``grep``) still run, so the script computes its arguments as it would.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ENTRY_POINTS = ("train.py", "train_async.py")
LOGGED_ONLY = (
    "pkill",
    "sleep",
    "ssh",
    "scp",
    "pip",
    "pip3",
    "hf",
    "huggingface-cli",
    "curl",
    "wget",
    "nohup",
)
STUBBED = ("ray", "python", "python3", "nvidia-smi", "hostname", "mkdir", *LOGGED_ONLY)

# One program serves every stub; it learns which one it is from its own file name.
_STUB = r"""
import json, os, sys

name = os.path.basename(sys.argv[1])  # the wrapper passes its own path first
argv = sys.argv[2:]
log = os.environ["VIME_LAUNCH_LOG"]
entries = ("train.py", "train_async.py")


def record(kind, **fields):
    with open(log, "a", encoding="utf-8") as out:
        out.write(json.dumps({"kind": kind, "tool": name, "argv": argv, "cwd": os.getcwd(), **fields}) + "\n")


def entry_at(command):
    for index, word in enumerate(command[:3]):
        if os.path.basename(word) in entries:
            return index
    return None


if name == "ray" and argv[:2] == ["job", "submit"] and "--" in argv:
    head, command = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    at = entry_at(command)
    if at is not None:
        record("launch", entry=os.path.basename(command[at]), args=command[at + 1 :], submit=head)
    else:
        record("call")
elif name in ("python", "python3") and entry_at(argv) is not None:
    at = entry_at(argv)
    record("launch", entry=os.path.basename(argv[at]), args=argv[at + 1 :], submit=[])
elif name == "nvidia-smi":
    gpus = int(os.environ.get("VIME_LAUNCH_GPUS", "8"))
    if "-L" in argv:
        for index in range(gpus):
            print(f"GPU {index}: NVIDIA H100 80GB HBM3 (UUID: GPU-stub-{index})")
    elif "topo" in argv:
        print("\t" + "\t".join(f"GPU{i}" for i in range(gpus)))
        for row in range(gpus):
            print(f"GPU{row}\t" + "\t".join("X" if col == row else "NV18" for col in range(gpus)))
    record("call")
elif name == "hostname":
    print("127.0.0.1" if "-I" in argv or "-i" in argv else "stub-node")
    record("call")
elif name in ("pip", "pip3") and argv[:1] in (["list"], ["show"], ["freeze"]):
    record("call")
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, "-m", "pip", *argv])  # read-only queries answer truly
elif name == "mkdir":
    scratch = os.environ["VIME_LAUNCH_SCRATCH"]
    paths = [a for a in argv if not a.startswith("-")]
    inside = [p for p in paths if os.path.abspath(p).startswith(scratch + os.sep)]
    for path in inside:
        os.makedirs(path, exist_ok=True)
    record("call", skipped=[p for p in paths if p not in inside])
else:
    record("call")
"""


@dataclass
class Launch:
    """One trainer start the script asked for: ``entry`` (train.py / train_async.py) and its arguments."""

    entry: str
    args: list[str]
    submit: list[str] = field(default_factory=list)  # the `ray job submit` options before `--`
    cwd: str = ""

    def runtime_env(self) -> dict:
        """The ``--runtime-env-json`` the script gave Ray ({} when none or not JSON)."""
        for index, word in enumerate(self.submit):
            text = None
            if word.startswith("--runtime-env-json="):
                text = word.split("=", 1)[1]
            elif word == "--runtime-env-json" and index + 1 < len(self.submit):
                text = self.submit[index + 1]
            if text is not None:
                try:
                    return json.loads(text)
                except ValueError:
                    return {}
        return {}


@dataclass
class ScriptRun:
    """What running one script with the stubs gave: its launches, the stubbed calls and how it ended."""

    script: str
    launches: list[Launch]
    calls: list[dict]
    returncode: int
    stderr_tail: str

    @property
    def one_line(self) -> str:
        lines = [line for line in self.stderr_tail.splitlines() if line.strip()]
        return lines[-1] if lines else ""


def write_stubs(folder: Path) -> Path:
    """The stub executables, one per name in ``STUBBED``, in ``folder``; returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "_vime_launch_stub.py"
    program.write_text(_STUB, encoding="utf-8")
    for name in STUBBED:
        stub = folder / name
        stub.write_text(
            f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(program))} "$0" "$@"\n'
        )
        stub.chmod(0o755)
    return folder


def relocated_copy(script: Path, relocate: dict[str, str]) -> Path:
    """``script`` with each absolute path prefix in ``relocate`` replaced (slime's examples source
    ``/root/slime/scripts/models/...``: the tree the user would have there), written beside it so
    that the script's own folder stays what it computes."""
    text = script.read_text(encoding="utf-8", errors="surrogateescape")
    for old, new in relocate.items():  # a whole path component: /root/slime, not /root/slime_x
        text = re.sub(re.escape(old.rstrip("/")) + r"(?![\w.-])", new.rstrip("/").replace("\\", "\\\\"), text)
    copy = script.with_name(f".{script.stem}.vime-launch{script.suffix}")
    copy.write_text(text, encoding="utf-8", errors="surrogateescape")
    return copy


def run_script(
    script: Path,
    cwd: Path,
    scratch: Path,
    *,
    env: dict[str, str] | None = None,
    relocate: dict[str, str] | None = None,
    gpus: int = 8,
    timeout: float = 120.0,
) -> ScriptRun:
    """Run ``bash script`` in ``cwd`` with the stubs first on PATH; ``env`` adds variables (a
    cluster's MASTER_ADDR, ...); ``relocate`` rewrites absolute paths in the script first (see
    relocated_copy). Nothing it starts outlives it: every launch is only recorded. Folders are
    made only under ``scratch``."""
    scratch = scratch.resolve()
    runnable = relocated_copy(script, relocate) if relocate else script
    stubs = write_stubs(scratch / "stubs")
    log = Path(tempfile.mkstemp(prefix="launch-", suffix=".jsonl", dir=scratch)[1])
    home = scratch / "home"
    home.mkdir(exist_ok=True)
    full_env = {
        "PATH": f"{stubs}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "VIME_LAUNCH_LOG": str(log),
        "VIME_LAUNCH_SCRATCH": str(scratch),
        "VIME_LAUNCH_GPUS": str(gpus),
        **(env or {}),
    }
    try:
        proc = subprocess.run(
            ["bash", str(runnable)],
            cwd=cwd,
            env=full_env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        returncode, stderr = proc.returncode, proc.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as exc:
        returncode, stderr = (
            -1,
            f"{(exc.stderr or b'').decode('utf-8', 'replace')}\ntimed out after {timeout:.0f} s",
        )
    finally:
        if runnable != script:
            runnable.unlink()
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]
    log.unlink()
    launches = [
        Launch(r["entry"], list(r["args"]), list(r.get("submit", [])), r["cwd"])
        for r in records
        if r["kind"] == "launch"
    ]
    calls = [r for r in records if r["kind"] == "call"]
    tail = "\n".join(stderr.splitlines()[-20:])
    return ScriptRun(str(script), launches, calls, returncode, tail)
