"""train_async.py --fully-async on the CPU: real engine, real Ray, the staleness bound in a real run."""

from __future__ import annotations

import json

import pytest

from vime.utils.arguments import parse_args


@pytest.mark.slow
def test_fully_async_run_keeps_the_bound_and_regenerates_a_stale_group(train_flags, tmp_path, ray_session):
    """A bound of one version: the engines run a batch ahead (samples one version behind are trained
    on), a group held back until two versions after its tokens is generated again (counted), and no
    trained sample is ever more than one version behind."""
    from train_async import train_async

    args = parse_args(
        train_flags(
            "--fully-async", "--max-policy-version-lag", "1",
            "--custom-generate-function-path", "tests.async_hooks.late_first_sample",
            "--use-tis", "--lr", "1e-2",
            "--num-rollout", "5",
            "--run-dir", str(tmp_path / "run"),
        )
    )  # fmt: skip
    records = train_async(args)
    assert [r["step"] for r in records] == [0, 1, 2, 3, 4]
    for record in records:
        histogram = {k: v for k, v in record.items() if k.startswith("async/lag_") and k[10:].isdigit()}
        assert sum(histogram.values()) == 16, record  # every trained sample counted once
        assert record["async/lag_max"] <= 1 and set(histogram) == {"async/lag_0", "async/lag_1"}
        assert record["rollout/weight_version_lag"] <= 1
        assert "train/tis" in record and record["async/trainer_idle_s"] == record["time/rollout_wait"]
    assert sum(r["async/lag_1"] for r in records) > 0  # generation ran ahead of training
    assert sum(r["async/regenerated_groups"] for r in records) >= 1  # the held-back group
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())["async"]
    assert summary["regenerated_groups"] >= 1 and summary["lag_max"] <= 1
    assert sum(summary["lag_histogram"].values()) == 5 * 16


def test_fully_async_flags_are_refused_where_they_cannot_work(tiny_model_dir, capsys):
    from train import train

    model = str(tiny_model_dir)
    base = ["--preset", "tiny-cpu", "--hf-checkpoint", model]
    with pytest.raises(SystemExit, match="train_async.py --fully-async"):
        train(parse_args([*base, "--fully-async"]))
    refusals = {
        "bounds the samples of --fully-async": ["--max-policy-version-lag", "1"],
        "applies to --fully-async": ["--stale-sample-action", "drop"],
        "give the bound too": ["--fully-async", "--stale-sample-action", "drop"],
        "must be 0 or more": ["--fully-async", "--max-policy-version-lag", "-1"],
        "picks one weight version per sample": ["--fully-async", "--keep-old-actor"],
        "would replace it": [
            "--fully-async",
            "--rollout-function-path",
            "vime.rollout.sft_rollout.generate_rollout",
        ],
    }
    for message, flags in refusals.items():
        with pytest.raises(SystemExit) as caught:
            parse_args([*base, *flags])
        assert caught.value.code == 2, flags
        error = capsys.readouterr().err.strip().splitlines()
        assert len(error) == 1 and message in error[0], (flags, error)
    args = parse_args([*base, "--fully-async"])
    assert args.rollout_function_path == "vime.rollout.async_rollout.generate_rollout_fully_async"
    assert args.stale_sample_action == "regenerate"
