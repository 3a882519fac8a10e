"""Helpers for the window/merge/resolve tests: real git repositories in tmp dirs, and a trivial
translator (a stand-in for the real one, used only to exercise the merge machinery; the end-to-end
tests use the real translator)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "test@example.com",
}


def git(repo: Path, *args: str, date: str = "1700000000 +0000", input: bytes | None = None) -> str:
    env = {**os.environ, **ENV, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, env=env, input=input, check=True
    )
    return proc.stdout.decode("utf-8", "replace").strip()


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Test Author")
    git(path, "config", "user.email", "test@example.com")
    return path


_tick = [1700000000]


def commit(repo: Path, message: str, files: dict[str, bytes | str | None] | None = None,
           renames: dict[str, str] | None = None) -> str:  # fmt: skip
    """Write (or delete, value None) files, apply renames (old -> new, via git mv), commit; return the sha."""
    for old, new in (renames or {}).items():
        (repo / new).parent.mkdir(parents=True, exist_ok=True)
        git(repo, "mv", old, new)
    for rel, data in (files or {}).items():
        target = repo / rel
        if data is None:
            git(repo, "rm", "-q", rel)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)
        git(repo, "add", rel)
    _tick[0] += 60
    git(repo, "commit", "-q", "--allow-empty", "-m", message, date=f"{_tick[0]} +0000")
    return git(repo, "rev-parse", "HEAD")


# --- a trivial translator (stand-in, for merge-machinery tests only) ---------------------------------


@dataclass
class FakeHit:
    rule_id: str
    line: int
    snippet: str


@dataclass
class FakeApplied:
    rule_id: str
    line: int


@dataclass
class FakeRef:
    path: str
    line: int
    snippet: str


@dataclass
class FakeTranslation:
    src_path: str
    dst_path: str | None
    data: bytes
    kind: str
    applied: list = field(default_factory=list)
    unsupported: list = field(default_factory=list)
    unmapped: list = field(default_factory=list)
    parse_error: str | None = None


class FakeRules:
    """``slime/`` maps to ``vime/``; ``.github/`` is not mirrored."""

    hash = hashlib.sha256(b"fake-rules-v1").hexdigest()

    def map_path(self, upstream_path: str) -> str | None:
        if upstream_path.startswith(".github/"):
            return None
        if upstream_path.startswith("slime/"):
            return "vime/" + upstream_path[len("slime/") :]
        return upstream_path


def fake_translate(path: str, data: bytes, rules: FakeRules) -> FakeTranslation:
    """sglang -> vllm word swap; ``pull_weights`` is an unsupported hit; ``sgl_kernel`` is unmapped."""
    dst = rules.map_path(path)
    if dst is None:
        return FakeTranslation(path, None, data, "not_mirrored")
    if b"\0" in data:
        return FakeTranslation(path, dst, data, "binary")
    text = data.decode("utf-8", "surrogateescape")  # non-UTF-8 text stays text, byte for byte
    kind = "python" if path.endswith(".py") else "text"
    out = FakeTranslation(path, dst, data, kind)
    if kind == "python":
        try:
            compile(text, path, "exec")
        except SyntaxError as exc:
            out.parse_error = f"line {exc.lineno}: {exc.msg}"
            return out
    lines = []
    for n, line in enumerate(text.splitlines(keepends=True), 1):
        if "sglang" in line:
            out.applied.append(FakeApplied("fake.sglang", n))
            line = line.replace("sglang", "vllm")
        if "pull_weights" in line:
            out.unsupported.append(FakeHit("fake.pull_weights", n, line.rstrip("\n")))
        if "sgl_kernel" in line:
            out.unmapped.append(FakeRef(path, n, line.rstrip("\n")))
        lines.append(line)
    out.data = "".join(lines).encode("utf-8", "surrogateescape")
    return out


# --- the scenario: one upstream window that produces every merge outcome ----------------------------

A_PY = "import os\n\n\ndef a1():\n    return 'sglang'\n\n\ndef a2():\n    return 2\n"
B_PY = "def f():\n    return 1\ndef g():\n    return 2\n"
C_PY = "X = 1\nY = 2\nZ = 3\n"
OLD_PY = "def keep():\n    return 'old'\n\n\n\n\n\ndef tail():\n    return 'sglang tail'\n"
DOC_MD = "# Title\n\nintro line\n\n\n\nmiddle\n\n\n\nend line\n"
LATIN = "caf\xe9 sglang\nline two\n".encode("latin-1")
BIN1 = b"\x89PNG\0\x01\x02base"
BIN2 = b"\x00\x01icon-base"


@dataclass
class Scenario:
    upstream: Path
    downstream: Path
    from_pr: int = 11
    to_pr: int = 14
    cutoff: str = ""
    tip: str = ""


def build_scenario(root: Path) -> Scenario:
    """Upstream slime-like history with a window #11..#14 and a downstream synced at #10 plus its own edits."""
    up = init_repo(root / "upstream")
    commit(
        up, "initial (#8)", {"slime/a.py": A_PY, "slime/gone.py": "G = 1\n", ".github/ci.yml": "on: push\n"}
    )
    base_files: dict[str, bytes | str | None] = {
        "slime/b.py": B_PY, "slime/c.py": C_PY, "slime/d.py": "D = 1\n", "slime/e.py": "E = 1\n",
        "slime/old_name.py": OLD_PY, "docs/x.md": DOC_MD, "slime/logo.bin": BIN1, "slime/icon.bin": BIN2,
        "slime/latin.txt": LATIN, "slime/broken.py": "def ok():\n    return 1\n", "slime/hits.py": "H = 1\n",
    }  # fmt: skip
    cutoff = commit(up, "base (#10)", base_files)
    commit(up, "feature A: sglang everywhere (#11)", {
        "slime/a.py": A_PY.replace("return 2", "return 'sglang 2'"),
        "slime/b.py": B_PY.replace("def g():", "def g(x=0):"),
        "slime/c.py": C_PY.replace("Y = 2", "Y = 'sglang upstream'"),
        "slime/d.py": None, "slime/e.py": None,
    })  # fmt: skip
    commit(up, "older fix (#9)", {"docs/x.md": DOC_MD.replace("end line", "end line (upstream)")})
    commit(
        up,
        "direct push: bump ci",
        {".github/ci.yml": "on: [push, pull_request]\n", "slime/logo.bin": BIN1 + b"v2"},
    )
    commit(up, "feature B (#12)", {
        "slime/new_mod.py": "from sglang import x\n\nNEW = 1\n", "slime/both.py": "BOTH = 'upstream'\n",
        "slime/icon.bin": BIN2 + b"-upstream", "slime/latin.txt": LATIN + "third caf\xe9\n".encode("latin-1"),
        "slime/gone.py": "G = 2\n",
    }, renames={"slime/old_name.py": "slime/new_name.py"})  # fmt: skip
    commit(
        up, "rename edit (#12b) (#15)", {"slime/new_name.py": OLD_PY.replace("sglang tail", "sglang tail v2")}
    )
    tip = commit(up, "feature C (#14)", {
        "slime/broken.py": "def ok(:\n    return 1\n",
        "slime/hits.py": "H = 1\nW = pull_weights()\nK = sgl_kernel.op\n",
    })  # fmt: skip
    commit(up, "late feature (#13)", {"slime/a.py": A_PY + "\n\ndef late():\n    pass\n"})

    down = init_repo(root / "downstream")
    rules = FakeRules()
    files: dict[str, bytes | str | None] = {}
    for rel in git(up, "ls-tree", "-r", "--name-only", cutoff).splitlines():
        raw = subprocess.run(
            ["git", "-C", str(up), "show", f"{cutoff}:{rel}"], capture_output=True, check=True
        ).stdout
        t = fake_translate(rel, raw, rules)
        if t.dst_path:
            files[t.dst_path] = t.data
    commit(down, "vime at slime #10", files)
    commit(down, "vime edits", {
        "vime/b.py": B_PY.replace("return 1", "return 10"),
        "vime/c.py": C_PY.replace("Y = 2", "Y = 'downstream'"),
        "vime/e.py": "E = 'downstream'\n",
        "vime/old_name.py": OLD_PY.replace("'old'", "'old, edited downstream'").replace("sglang", "vllm"),
        "docs/x.md": DOC_MD.replace("intro line", "intro line (vime)"),
        "vime/icon.bin": BIN2 + b"-downstream",
        "vime/both.py": "BOTH = 'downstream'\n",
        "vime/gone.py": None,
        "vime/local_only.py": "LOCAL = 1\n",
        "vime/latin.txt": "caf\xe9 vllm\nline two (vime)\n".encode("latin-1"),
    })  # fmt: skip
    return Scenario(up, down, cutoff=cutoff, tip=tip)
