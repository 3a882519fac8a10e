"""The built wheel works on its own: installed into a fresh virtualenv outside the checkout, its
``vime-sync`` finds its rule tables and demo, ``vime-contract`` runs a shipped contract against a
plugin given by path, and ``vime-sync gate`` runs the shipped contracts on the demo's sync branch.

The heavy dependencies (vLLM, torch, Ray) are not downloaded again: after the wheel is installed
with ``--no-deps``, a ``.pth`` file in the new environment names this project's .venv
site-packages, which only appends that folder to ``sys.path`` (its own ``.pth`` files, among them
the editable install's finder, are not run), so ``vime`` and ``sync`` come from the wheel alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow

GOOD_REWARD = """
async def score(args, sample, **kwargs):
    return 1.0 if "42" in (sample.response or "") else 0.0
"""


def _source_copy(dest: Path) -> Path:
    """The working tree's tracked and new files (not ignored ones), so the build sees only what git would."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for rel in filter(None, (name.decode() for name in listed)):
        source = ROOT / rel
        if source.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel)
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("wheel")
    source = _source_copy(base / "src")
    dist = base / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            str(source),
            "-w",
            str(dist),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = dist.glob("vime-*.whl")
    env_dir = base / "env"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    # install first, then add the dependencies' folder: pip must never see (or touch) the .venv's vime
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
    )
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    (site / "zz_vime_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = base / "work"
    work.mkdir()
    return {"bin": env_dir / "bin", "site": site, "work": work}


def _run(installed: dict[str, Path], *command: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_ADDOPTS")}
    env["PATH"] = f"{installed['bin']}{os.pathsep}{env['PATH']}"
    return subprocess.run(
        [str(installed["bin"] / command[0]), *command[1:]],
        cwd=cwd or installed["work"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_packages_come_from_the_wheel(installed):
    done = _run(installed, "python", "-c", "import sync, vime; print(sync.__file__); print(vime.__file__)")
    assert done.returncode == 0, done.stderr
    for line in done.stdout.split():
        assert Path(line).is_relative_to(installed["site"]), line


def test_rules_check_finds_the_shipped_tables(installed):
    done = _run(installed, "vime-sync", "rules", "check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (installed["site"] / "sync" / "translations" / "modules.toml").is_file()


def test_contract_with_a_path_argument(installed):
    plugin_dir = installed["work"] / "plugin"
    plugin_dir.mkdir()
    (plugin_dir / "my_rm.py").write_text(GOOD_REWARD)
    contract = installed["site"] / "vime" / "contracts" / "test_reward_contract.py"
    done = _run(
        installed, "vime-contract", str(contract), "--custom-rm-path", "my_rm.score", "-q", cwd=plugin_dir
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout
    bad = _run(installed, "vime-contract", str(contract), "--custom-rm-path", "my_rm.missing", cwd=plugin_dir)
    assert bad.returncode == 2 and "--custom-rm-path" in bad.stderr


def test_a_contract_whose_default_is_a_shipped_fixture(installed):
    """The generate contract's default hook lives in the contracts' fixtures, which ship as vime/contracts/fixtures."""
    contract = installed["site"] / "vime" / "contracts" / "test_generate_function_contract.py"
    done = _run(installed, "vime-contract", str(contract), "-q")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout


def test_demo_then_gate_on_its_sync_branch(installed):
    demo_dir = installed["work"] / "demo"
    done = _run(installed, "vime-sync", "demo", "--dir", str(demo_dir))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (worktree,) = {
        p.parent.parent
        for p in demo_dir.rglob(".vime-sync/gate.toml")
        if (p.parent.parent / ".git").is_file()
    }
    gate = _run(installed, "vime-sync", "gate", "--worktree", str(worktree))
    # the demo's PR #116 breaks the reward contract: the shipped contract ran and named it
    assert gate.returncode == 1, gate.stdout[-3000:] + gate.stderr[-3000:]
    assert "(files: vime_plugins/rollout/math_reward.py; PRs: #116)" in gate.stderr
