"""run_gate on real git worktrees built in tmp_path: static failures and contract failures name the
files and the upstream PRs; a clean worktree passes; the worktree's code (not the installation's)
is what the contracts test."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sync.gate import GateConfigError, run_gate

ROOT = Path(__file__).resolve().parents[1]
GOOD_RM = "async def reward_func(args, sample, **kwargs) -> float:\n    return 1.0 if '\\\\boxed{2}' in sample.response else 0.0\n"
DICT_RM = "async def reward_func(args, sample, **kwargs) -> dict:\n    return {'score': 1.0}\n"
REWARD_GATE = (
    '[[contract]]\nfile = "tests/contract/test_reward_contract.py"\n'
    'args = ["--custom-rm-path", "vime_plugins.rollout.math_reward.reward_func"]\n'
)


def git_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True)
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=path, check=True)
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
            "commit",
            "-qm",
            "sync",
        ],
        cwd=path,
        check=True,
    )
    return path


def plugin_worktree(path: Path, reward_source: str, **extra: str) -> Path:
    return git_repo(
        path,
        {
            "vime_plugins/__init__.py": "",
            "vime_plugins/rollout/__init__.py": "",
            "vime_plugins/rollout/math_reward.py": reward_source,
            ".vime-sync/gate.toml": REWARD_GATE,
            **extra,
        },
    )


FILE_PRS = {
    "vime_plugins/rollout/math_reward.py": [116],
    "vime/utils/debug_dump.py": [121],
    "scripts/run.sh": [120],
    "vime/rollout/engine.py": [115, 111],
}


def test_broken_worktree_fails_naming_files_and_prs(tmp_path):
    worktree = plugin_worktree(
        tmp_path / "wt",
        DICT_RM,
        **{
            "vime/utils/debug_dump.py": 'def dump(x):\n    print "state:", x\n',
            "scripts/run.sh": "python train.py --vllm-max-num-seqs 8 --vllm-mem-fraction-static 0.6\n",
            "vime/rollout/engine.py": "import sglang.srt.server_args\n<<<<<<< ours\nA = 1\n=======\nA = 2\n>>>>>>> theirs\n",
            "untracked_is_ignored.py": "",
        },
    )
    (worktree / "scratch.py").write_text("def broken(:\n")  # untracked: not part of the merge
    result = run_gate(worktree, tmp_path / "report", FILE_PRS)
    assert not result.passed
    by_check = {}
    for failure in result.failures:
        by_check.setdefault(failure.check, []).append(failure)
    assert [(f.files, f.prs, f.line) for f in by_check["compile"]] == [
        (["vime/rollout/engine.py"], [111, 115], 2),
        (["vime/utils/debug_dump.py"], [121], 2),
    ]
    assert (
        by_check["vllm-flag"][0].prs == [120]
        and "--vllm-mem-fraction-static" in by_check["vllm-flag"][0].message
    )
    assert by_check["conflict-marker"][0].files == ["vime/rollout/engine.py"]
    (contract,) = by_check["contract"]
    assert contract.files == ["vime_plugins/rollout/math_reward.py"] and contract.prs == [116]
    assert "reward is a dict" in contract.message and "--reward-key is not set" in contract.message
    assert result.prs == [111, 115, 116, 120, 121]

    saved = json.loads((tmp_path / "report" / "gate.json").read_text())
    assert saved["passed"] is False and saved["prs"] == [111, 115, 116, 120, 121]
    markdown = (tmp_path / "report" / "GATE.md").read_text()
    assert markdown.startswith("## Gate: FAILED") and "#116" in markdown and "math_reward.py" in markdown


def test_clean_worktree_passes_and_says_which_framework_it_used(tmp_path):
    worktree = plugin_worktree(
        tmp_path / "wt", GOOD_RM, **{"scripts/run.sh": "python train.py --vllm-max-num-seqs 8\n"}
    )
    result = run_gate(worktree, tmp_path / "report", FILE_PRS)
    assert result.passed, [f.describe() for f in result.failures]
    assert [c.status for c in result.checks] == ["passed"] * 7  # vime-import included
    assert any("this installation's vime framework" in note for note in result.notes)
    assert json.loads((tmp_path / "report" / "gate.json").read_text())["passed"] is True


def test_contracts_test_the_worktrees_own_framework_code(tmp_path):
    """A worktree that carries vime: breaking its default reward post-process fails the gate,
    although this installation's copy is fine."""
    worktree = vime_copy(tmp_path / "wt")
    target = worktree / "vime/rollout/reward_post_process.py"
    target.write_text(target.read_text().replace("return raw, normalized", "return raw, normalized[:-1]"))
    (worktree / ".vime-sync").mkdir()
    (worktree / ".vime-sync/gate.toml").write_text(
        '[[contract]]\nfile = "tests/contract/test_reward_post_process_contract.py"\n'
    )
    git_repo(worktree, {})
    result = run_gate(worktree, tmp_path / "report", {"vime/rollout/reward_post_process.py": [130]})
    failures = [f for f in result.failures if f.check == "contract"]
    assert failures and all(f.check == "contract" for f in result.failures)
    assert any("rewards has 7 entries for 8 samples" in f.message for f in failures)
    assert all(f.prs == [130] and f.files == ["vime/rollout/reward_post_process.py"] for f in failures)
    assert not result.notes  # the worktree's framework was used


def vime_copy(worktree: Path) -> Path:
    for rel in ("vime", "tests/contract", "tools"):
        shutil.copytree(ROOT / rel, worktree / rel, ignore=shutil.ignore_patterns("__pycache__"))
    return worktree


def test_default_contracts_run_together_and_name_the_broken_default(tmp_path):
    """No gate.toml: every contract file against the worktree's defaults, in one subprocess; a
    failure is attributed to its own contract file and that file's default hook."""
    worktree = vime_copy(tmp_path / "wt")
    target = worktree / "vime/rollout/train_data.py"
    target.write_text(
        target.read_text().replace('"sample_indices": [sample.index for sample in samples],', "")
    )
    git_repo(worktree, {})
    result = run_gate(worktree, tmp_path / "report", {"vime/rollout/train_data.py": [131]})
    contracts = next(c for c in result.checks if c.name == "contracts")
    assert contracts.checked >= 13 and "in 1 run(s)" in contracts.note
    failures = [f for f in result.failures if f.check == "contract"]
    assert failures and all(f.prs == [131] and "vime/rollout/train_data.py" in f.files for f in failures)
    assert any(
        f.message.startswith("test_convert_samples_contract.py: ")
        and "train data lacks ['sample_indices']" in f.message
        for f in failures
    )


def test_missing_contract_file_and_bad_config_are_named(tmp_path):
    worktree = git_repo(
        tmp_path / "wt",
        {".vime-sync/gate.toml": '[[contract]]\nfile = "tests/contract/test_nope_contract.py"\n'},
    )
    result = run_gate(worktree, tmp_path / "report", {})
    assert [f.message for f in result.failures if f.check == "contract"] == [
        f"contract test_nope_contract.py: tests/contract/test_nope_contract.py is in neither the worktree nor {ROOT}"
    ]
    (worktree / ".vime-sync/gate.toml").write_text("[[contract]]\nargs = 3\n")
    with pytest.raises(GateConfigError, match=r"\[\[contract\]\] #1 needs file"):
        run_gate(worktree, tmp_path / "report", {})


def test_cli_exit_status_and_pr_names(tmp_path):
    worktree = plugin_worktree(tmp_path / "wt", DICT_RM)
    report = tmp_path / "report"
    report.mkdir()
    (report / "file_prs.json").write_text(json.dumps(FILE_PRS))
    done = subprocess.run(
        [sys.executable, "-m", "sync.cli", "gate", "--worktree", str(worktree), "--report", str(report)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    assert (
        "FAILED: 1 failure(s), PRs [116]" in done.stderr
        and "vime_plugins/rollout/math_reward.py" in done.stderr
    )
    assert (report / "GATE.md").is_file()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--worktree", "/no/such/worktree"],
            "vime-sync gate: worktree /no/such/worktree does not exist; pass --worktree PATH",
        ),
        (["--file-prs", "/no/such/prs.json"], "vime-sync gate: --file-prs /no/such/prs.json not found"),
    ],
)
def test_cli_bad_input_is_one_line(tmp_path, extra, message):
    worktree = git_repo(tmp_path / "wt", {"a.py": "x = 1\n"})
    done = subprocess.run(
        [sys.executable, "-m", "sync.cli", "gate", "--worktree", str(worktree), *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and done.stderr.strip() == message  # refused input: 1 (usage errors: 2)
