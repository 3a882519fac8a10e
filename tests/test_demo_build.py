"""The embedded demo builds real upstream/downstream git repositories with the history the window needs."""

import subprocess
from pathlib import Path

import pytest

from sync.demo.build import build_demo
from sync.demo.history import CUTOFF_PR


def _log(repo: Path) -> list[str]:
    out = subprocess.run(
        ["git", "log", "--first-parent", "--reverse", "--format=%s"],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return out.splitlines()


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return build_demo(tmp_path_factory.mktemp("demo"))


def test_upstream_history_has_the_window_shape(demo):
    subjects = _log(demo.upstream)
    numbers = [s.rsplit("(#", 1)[1].rstrip(")") if "(#" in s else None for s in subjects]
    assert numbers[0] == "101"
    cutoff_at = numbers.index(str(CUTOFF_PR))
    tip_at = numbers.index(str(demo.to_pr))
    inside = numbers[cutoff_at + 1 : tip_at + 1]
    assert "109" in inside  # numbered below the window, merged inside it
    assert "114" not in inside and "114" in numbers[tip_at + 1 :]  # numbered inside, merged later
    assert None in inside  # a direct push


def test_downstream_is_translated_and_carries_vime_edits(demo):
    files = subprocess.run(
        ["git", "ls-files"], cwd=demo.downstream, check=True, capture_output=True, text=True
    )
    listed = set(files.stdout.split())
    assert not any(p.startswith("slime/") for p in listed), "paths must be mapped to vime/"
    assert "vime/utils/arguments.py" in listed
    assert not any(".github/" in p or "docker/patch/" in p for p in listed), (
        "files not mirrored must stay out"
    )
    args_text = (demo.downstream / "vime/utils/arguments.py").read_text()
    assert "default=0.7" in args_text
    assert "sglang" not in (demo.downstream / "vime/utils/http_utils.py").read_text().lower()


def _head(repo: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def test_two_builds_give_the_same_commits(demo, tmp_path):
    again = build_demo(tmp_path / "again")
    assert _head(again.upstream) == _head(demo.upstream)
    assert _head(again.downstream) == _head(demo.downstream)


def test_demo_refuses_a_used_directory(demo):
    with pytest.raises(FileExistsError, match="already exists"):
        build_demo(demo.upstream.parent)
