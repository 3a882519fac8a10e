"""--disable-wandb-random-suffix: slime names the W&B group <group>_<random id> (run <that>-RANK_0) unless
the flag is given; checked on real offline W&B runs."""

from __future__ import annotations

import pytest

from vime.utils.arguments import parse_args
from vime.utils.wandb_utils import init_wandb, run_group_and_name


def test_names_with_and_without_the_suffix():
    assert run_group_and_name("exp", True, lambda: "ab12cd") == ("exp_ab12cd", "exp_ab12cd-RANK_0")
    assert run_group_and_name("exp", False, lambda: "ab12cd") == ("exp", "exp")
    assert run_group_and_name(None, True, lambda: "ab12cd") == (None, None)  # W&B names it


@pytest.mark.parametrize("disable", [False, True])
def test_offline_run_gets_slimes_names(tiny_model_dir, tmp_path, monkeypatch, disable):
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    flags = ["--hf-checkpoint", str(tiny_model_dir), "--rollout-batch-size", "2", "--n-samples-per-prompt", "2",
             "--num-rollout", "1", "--use-wandb", "--wandb-group", "exp", "--wandb-dir", str(tmp_path)]  # fmt: skip
    args = parse_args(flags + (["--disable-wandb-random-suffix"] if disable else []))
    run = init_wandb(args, config={})
    try:
        if disable:
            assert (run.group, run.name) == ("exp", "exp")
        else:
            assert run.group.startswith("exp_") and len(run.group) > len("exp_")
            assert run.name == f"{run.group}-RANK_0"
    finally:
        run.finish()
