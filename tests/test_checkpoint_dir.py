"""Checkpoint safety: another run's --save is refused, --load of a step dir loads that step.

These run validation only (no Ray, no engine): each case is refused or resolved before anything starts.
"""

from __future__ import annotations

import pytest

from vime.backends.torch_utils import checkpoint as ckpt
from vime.utils.arguments import ArgumentValidationError, parse_args
from vime.utils.checkpoint_dir import LATEST_FILE, check_save_dir, resolve_load


def _old_run(root, steps=range(10, 13)):
    """A directory as another run leaves it: steps 10..12, marker 12, data-source state, metrics."""
    for step in steps:
        staging = ckpt.staging_dir(root, step)
        (staging / "model").mkdir()
        (staging / "model" / "weights.txt").write_text(f"old {step}")
        ckpt.commit(root, step, staging)
    (root / "rollout").mkdir()
    (root / "rollout" / "data_source_state_12.json").write_text("{}")
    return sorted(p.name for p in root.rglob("*"))


def _parse(tiny_model_dir, prompts, *flags):
    base = ["--hf-checkpoint", str(tiny_model_dir), "--prompt-data", str(prompts), "--rollout-batch-size", "2",
            "--n-samples-per-prompt", "2", "--num-rollout", "20"]  # fmt: skip
    return parse_args([*base, *flags], validate=False)


def _validate(args):
    from vime.utils.arguments import validate_args

    return validate_args(args)


@pytest.mark.parametrize("keep", [None, "2"])
def test_fresh_run_on_another_runs_save_dir_is_refused_and_nothing_changes(
    tmp_path, tiny_model_dir, arithmetic_prompts, keep
):
    save = tmp_path / "ckpt"
    before = _old_run(save)
    args = _parse(
        tiny_model_dir,
        arithmetic_prompts,
        "--save",
        str(save),
        *(["--keep-checkpoints", keep] if keep else []),
    )
    with pytest.raises(
        ArgumentValidationError, match=r"already holds another run's checkpoints \(steps 10..12\)"
    ):
        _validate(args)
    assert sorted(p.name for p in save.rglob("*")) == before
    assert (save / LATEST_FILE).read_text() == "12\n"


def test_resume_flag_continues_the_run_in_save(tmp_path, tiny_model_dir, arithmetic_prompts):
    save = tmp_path / "ckpt"
    _old_run(save)
    args = _validate(_parse(tiny_model_dir, arithmetic_prompts, "--save", str(save), "--resume"))
    assert (args.load, args.load_step) == (str(save), 12)
    args = _validate(_parse(tiny_model_dir, arithmetic_prompts, "--save", str(save), "--load", str(save)))
    assert args.load_step == 12


def test_load_of_a_step_dir_loads_that_step(tmp_path, tiny_model_dir, arithmetic_prompts):
    save = tmp_path / "ckpt"
    _old_run(save)
    step_dir = ckpt.iteration_dir(save, 10)
    args = _validate(
        _parse(tiny_model_dir, arithmetic_prompts, "--load", str(step_dir), "--save", str(tmp_path / "new"))
    )
    assert (args.load, args.load_step) == (str(save), 10)
    missing = ckpt.iteration_dir(save, 9)
    with pytest.raises(ArgumentValidationError, match="iter_0000009 does not exist"):
        _validate(_parse(tiny_model_dir, arithmetic_prompts, "--load", str(missing)))


def test_step_dir_resolves_to_its_parent_and_that_step(tmp_path):
    """Backends load ``args.load_step`` (set from this), not the marker's newest step."""
    save = tmp_path / "ckpt"
    _old_run(save)
    target = resolve_load(ckpt.iteration_dir(save, 11))
    assert target.step == 11 and ckpt.latest_iteration(target.root) == 12


def test_resume_past_num_rollout_and_zero_steps_are_refused(tmp_path, tiny_model_dir, arithmetic_prompts):
    save = tmp_path / "ckpt"
    _old_run(save)
    args = _parse(tiny_model_dir, arithmetic_prompts, "--save", str(save), "--resume", "--num-rollout", "13")
    with pytest.raises(ArgumentValidationError, match="resumes after step 12 and --num-rollout is 13"):
        _validate(args)
    with pytest.raises(ArgumentValidationError, match="--num-rollout must be 1 or more"):
        _validate(_parse(tiny_model_dir, arithmetic_prompts, "--num-rollout", "0"))


def test_directories_without_a_marker(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert resolve_load(empty, save=empty).step is None  # slime's scripts: --load = --save on a fresh run
    with pytest.raises(ValueError, match="holds no checkpoint"):
        resolve_load(empty)
    staged = tmp_path / "staged"
    ckpt.commit(staged, 3, ckpt.staging_dir(staged, 3))
    (staged / LATEST_FILE).unlink()
    with pytest.raises(ValueError, match="has steps 3..3 but no latest_checkpointed_iteration.txt"):
        resolve_load(staged)
    check_save_dir(tmp_path / "new", None)  # a new or empty --save is fine
    check_save_dir(empty, None)
