"""vime/contract_runner.py (run as tools/run_contract.py): ``--xxx-path`` → ``VIME_CONTRACT_XXX_PATH``, pass-through to pytest, bad paths."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vime import contract_runner as runner

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ROOT / "tools" / "run_contract.py"
REWARD = "tests/contract/test_reward_contract.py"


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_path_flags_become_env_vars_and_the_rest_passes_through():
    invocation = runner.parse_argv(
        [
            REWARD,
            "--custom-rm-path",
            "a.b.c",
            "-x",
            "--rollout-function-path=d.e",
            "-k",
            "single",
            "--group-rm",
            "--reward-key",
            "score",
        ]
    )
    assert invocation.hook_paths == {"custom-rm-path": "a.b.c", "rollout-function-path": "d.e"}
    assert invocation.pytest_args == ["-x", "-k", "single"]
    assert invocation.env == {
        "VIME_CONTRACT_CUSTOM_RM_PATH": "a.b.c",
        "VIME_CONTRACT_ROLLOUT_FUNCTION_PATH": "d.e",
        "VIME_CONTRACT_GROUP_RM": "1",
        "VIME_CONTRACT_REWARD_KEY": "score",
    }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "usage: run_contract.py FILE"),
        (["nope.py"], "contract file 'nope.py' not found"),
        ([REWARD, "--custom-rm-path"], "--custom-rm-path needs a value"),
        ([REWARD, "--custom-rm-path", "-x"], "--custom-rm-path needs a value"),
        ([REWARD, "--args", "{rollout_max_context_len: 1}"], "--args takes JSON"),
        ([REWARD, "--args", "[1, 2]"], "--args takes JSON like"),
        ([REWARD, "--prompt", "{}"], "--prompt takes JSON like"),
    ],
)
def test_usage_errors_are_one_line(argv, message, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(runner.ContractUsageError, match=message.replace("(", r"\(")):
        runner.parse_argv(argv)


def test_env_var_reaches_the_contract_file(tmp_path):
    """A probe contract file records what it sees: the env var and a pass-through -k selection."""
    probe = tmp_path / "test_probe_contract.py"
    probe.write_text(
        'import os\n\nFLAG = "probe-path"\n\n\n'
        "def test_sees_path():\n    assert os.environ['VIME_CONTRACT_PROBE_PATH'] == 'os.path.join'\n\n\n"
        "def test_other():\n    raise AssertionError('deselected by -k')\n"
    )
    done = run(
        str(RUNNER),
        str(probe),
        "--probe-path",
        "os.path.join",
        "-k",
        "sees_path",
        "-q",
        "-p",
        "no:cacheprovider",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 1 deselected" in done.stdout


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (
            "tests.contract.fixtures.broken_reward.nope",
            "module 'tests.contract.fixtures.broken_reward' has no attribute 'nope'",
        ),
        ("no_such_pkg.rm.score", "module 'no_such_pkg.rm' not found"),
        ("score", "is not a dotted path"),
    ],
)
def test_bad_path_is_one_line_naming_module_and_attribute(path, message):
    done = run(str(RUNNER), REWARD, "--custom-rm-path", path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert (
        len(lines) == 1
        and message in lines[0]
        and lines[0].startswith("run_contract: error: --custom-rm-path:")
    )
    assert done.stdout == ""  # pytest never started


def test_a_flag_the_file_does_not_take_is_refused():
    done = run(str(RUNNER), REWARD, "--rollout-function-path", "os.path.join")
    assert done.returncode == 2
    assert (
        "test_reward_contract.py does not take --rollout-function-path (it takes --custom-rm-path)"
        in done.stderr
    )


def test_contract_file_runs_directly_with_the_same_arguments():
    good = run(REWARD, "--custom-rm-path", "tests.contract.fixtures.reference_plugins.boxed_reward", "-q")
    assert good.returncode == 0 and "1 passed, 3 skipped" in good.stdout, good.stdout + good.stderr
    bad = run(REWARD, "--custom-rm-path", "tests.contract.fixtures.broken_reward.returns_none", "-q")
    assert bad.returncode == 1 and "reward is None" in bad.stdout


def test_plugin_next_to_the_author_imports_from_the_current_directory(tmp_path):
    (tmp_path / "my_rm.py").write_text("async def score(args, sample, **kw):\n    return 0\n")
    done = run(str(RUNNER), str(ROOT / REWARD), "--custom-rm-path", "my_rm.score", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_several_files_share_one_run_and_a_flag_needs_one_taker(monkeypatch):
    monkeypatch.chdir(ROOT)
    other = "tests/contract/test_buffer_filter_contract.py"
    invocation = runner.parse_argv([REWARD, other, "--custom-rm-path", "a.b", "-q"])
    assert [p.as_posix() for p in invocation.files] == [REWARD, other] and invocation.pytest_args == ["-q"]
    runner.check_file_takes(invocation)  # the reward file takes it
    invocation = runner.parse_argv([REWARD, other, "--data-source-path", "a.b"])
    with pytest.raises(
        runner.ContractUsageError,
        match="test_reward_contract.py, test_buffer_filter_contract.py does not take --data-source-path",
    ):
        runner.check_file_takes(invocation)


def test_contract_args_fall_back_to_vimes_own_defaults(monkeypatch):
    """Hooks get the contract's settings, vime's default for any other flag, and a clear error otherwise."""
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "contract"))
    from contract_support import make_args, vime_defaults

    args = make_args(rollout_batch_size=3)
    assert args.rollout_batch_size == 3 and args.n_samples_per_prompt == 2  # the contract's settings
    defaults = vime_defaults()
    assert "vllm_server_concurrency" in defaults and "rollout_max_context_len" in defaults
    assert args.vllm_server_concurrency == defaults["vllm_server_concurrency"]  # vime's own default
    assert args.rollout_max_context_len is None
    assert getattr(args, "not_a_flag", "fallback") == "fallback"
    with pytest.raises(AttributeError, match="'not_a_flag': it is not one of vime's flags"):
        _ = args.not_a_flag


def test_args_prompt_and_label_reach_every_hook_of_the_contract(tmp_path):
    """``--args`` / ``--prompt`` / ``--label`` are JSON the contract gives every hook it calls:
    the reward contract's args too (a reward that reads a flag its launch script sets)."""
    (tmp_path / "flag_reward.py").write_text(
        "async def score(args, sample, **kwargs):\n"
        "    assert args.rollout_max_context_len == 77, 'no flag'\n"
        "    assert sample.prompt == [{'role': 'user', 'content': 'hi'}], sample.prompt\n"
        "    assert sample.label == {'target': ['2']}, sample.label\n"
        "    return 1.0\n"
    )
    done = run(
        str(RUNNER), str(ROOT / REWARD), "--custom-rm-path", "flag_reward.score",
        "--args", '{"rollout_max_context_len": 77}', "--prompt", '[{"role": "user", "content": "hi"}]',
        "--label", '{"target": ["2"]}', "-q", "-p", "no:cacheprovider", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout
