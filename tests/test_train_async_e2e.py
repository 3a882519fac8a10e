"""train_async.py on the CPU: generation of step N+1 overlaps training of step N (real engine, real Ray)."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_async_rollouts_are_one_update_behind(train_flags, tmp_path, ray_session):
    """Step N+1 is generated while step N trains, so its samples come from the weights before step N.

    Step 0's samples come from the trainer's own weights (log-probs match); every later step's
    come from weights one update old, which the trainer's recomputed log-probs show (a random
    0/1 reward makes every step change the weights; train.py, synchronous, shows no such gap).
    """
    from train_async import train_async
    from vime.utils.arguments import parse_args

    args = parse_args(
        train_flags(
            "--lr", "1e-2",
            "--rm-type", "random", "--custom-rm-path", "",
            "--num-rollout", "3",
            "--metrics-jsonl", str(tmp_path / "metrics.jsonl"),
        )
    )  # fmt: skip
    records = train_async(args)
    assert [r["step"] for r in records] == [0, 1, 2]
    diffs = [r["train/train_rollout_logprob_abs_diff"] for r in records]
    assert diffs[0] < 1e-3, diffs
    assert all(d > 1e-3 for d in diffs[1:]), diffs  # off-policy by one update: generation overlapped training
    assert all("time/update_weights" in r for r in records)  # --update-weights-interval 1
    assert records[0]["startup/first_weight_sync"] > 0 and "startup/trainer" in records[0]


def test_async_refuses_colocate(tiny_model_dir):
    from train_async import train_async
    from vime.utils.arguments import parse_args

    args = parse_args(["--preset", "tiny-cpu", "--hf-checkpoint", str(tiny_model_dir), "--colocate"])
    with pytest.raises(SystemExit, match="drop --colocate"):
        train_async(args)
