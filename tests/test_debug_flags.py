"""slime's debug-data flags: --dump-details, --save-debug-train-data, --load-debug-rollout-data-subsample,
and the one-line rules of --check-weight-update-equal (its engine side: test_weight_update_check.py)."""

from __future__ import annotations

from argparse import Namespace

import pytest
import torch

from vime.rollout.debug_data import load_rollout_data, save_rollout_data, subsample_rollout_data
from vime.utils.args.debug import fill_debug_paths
from vime.utils.arguments import parse_args


def _base(model_dir, *extra: str) -> list[str]:
    return ["--hf-checkpoint", str(model_dir), "--rollout-batch-size", "4", "--n-samples-per-prompt", "2",
            "--num-rollout", "1", *extra]  # fmt: skip


def _rollout_data(n: int = 8) -> dict:
    """A step's train data as the rollout side hands it over (vime.rollout.train_data)."""
    tokens = [[5, 6, 7, 8 + i % 5, 9, 10 + i][: 4 + i % 3] for i in range(n)]
    lengths = [1 + i % 3 for i in range(n)]
    return {
        "tokens": tokens,
        "response_lengths": lengths,
        "rewards": [(-1.0) ** i for i in range(n)],
        "raw_reward": [float(i % 2 == 0) for i in range(n)],
        "truncated": [0] * n,
        "loss_masks": [[1] * length for length in lengths],
        "sample_indices": list(range(n)),
        "rollout_ids": [i // 2 for i in range(n)],  # two samples per rollout, as a compact rollout makes
        "rollout_mask_sums": [lengths[i - i % 2] + lengths[i - i % 2 + 1] for i in range(n)],
    }


def test_dump_details_fills_both_templates_unless_given(tiny_model_dir, tmp_path):
    args = parse_args(_base(tiny_model_dir, "--dump-details", str(tmp_path / "dump")))
    assert args.save_debug_rollout_data == f"{tmp_path}/dump/rollout_data/{{rollout_id}}.pkl"
    assert args.save_debug_train_data == f"{tmp_path}/dump/train_data/{{rollout_id}}.pt"
    mine = str(tmp_path / "mine_{rollout_id}.pkl")
    args = parse_args(
        _base(tiny_model_dir, "--dump-details", str(tmp_path), "--save-debug-rollout-data", mine)
    )
    assert args.save_debug_rollout_data == mine and args.save_debug_train_data.startswith(str(tmp_path))


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--save-debug-rollout-data", "/tmp/x_{rollout_id}", "--save-debug-train-data", "/tmp/x_{rollout_id}"],
         "name the same file"),
        (["--load-debug-rollout-data-subsample", "0.5"], "give that too"),
        (["--load-debug-rollout-data", "/tmp/r_{rollout_id}.pkl", "--load-debug-rollout-data-subsample", "1.5"],
         "must be in (0, 1]"),
        (["--check-weight-update-equal", "--debug-rollout-only"], "which runs one side only"),
    ],
)  # fmt: skip
def test_bad_debug_flags_fail_in_one_line(tiny_model_dir, capsys, extra, needle):
    with pytest.raises(SystemExit):
        parse_args(_base(tiny_model_dir, *extra))
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err


def test_weight_check_refuses_a_resumed_trainer():
    args = Namespace(dump_details=None, save_debug_rollout_data=None, save_debug_train_data=None,
                     load_debug_rollout_data_subsample=None, load_debug_rollout_data=None,
                     check_weight_update_equal=True, debug_rollout_only=False, debug_train_only=False,
                     load="/ckpt")  # fmt: skip
    with pytest.raises(ValueError, match="--load /ckpt starts the trainer from other weights"):
        fill_debug_paths(args)


def test_subsample_keeps_slimes_head_and_tail_and_recounts_rollouts():
    data = _rollout_data(10)
    data["rollout_ids"] = [i // 2 for i in range(10)]
    cut = subsample_rollout_data(data, 0.5)  # int(10 * 0.5) = 5: the first 2 and the last 3 (slime)
    assert cut["sample_indices"] == [0, 1, 7, 8, 9]
    assert all(len(cut[k]) == 5 for k in ("tokens", "rewards", "loss_masks", "rollout_ids"))
    lengths = dict(zip(data["sample_indices"], data["response_lengths"], strict=True))
    first, lone, last = (
        lengths[0] + lengths[1],
        lengths[7],
        lengths[8] + lengths[9],
    )  # rollout 3 lost sample 6
    assert cut["rollout_mask_sums"] == [first, first, lone, last, last]
    with pytest.raises(ValueError, match="keeps none of the 10 samples"):
        subsample_rollout_data(data, 0.05)


def test_load_with_subsample_reads_the_fraction(tmp_path):
    template = str(tmp_path / "r_{rollout_id}.pkl")
    save_rollout_data(template, 3, _rollout_data(8))
    assert len(load_rollout_data(template, 3)["tokens"]) == 8
    assert load_rollout_data(template, 3, subsample=0.5)["sample_indices"] == [0, 1, 6, 7]


@pytest.mark.slow
def test_replayed_step_dumps_what_it_trained_on(tiny_model_dir, tmp_path, ray_session):
    """A trainer-only run (no engine) replays saved rollout data, half of it, with --dump-details:
    the dump holds the tokenizer and, per step, the samples trained with their log-probs and advantages."""
    from train import train

    template = str(tmp_path / "saved_{rollout_id}.pkl")
    save_rollout_data(template, 0, _rollout_data(8))
    dump = tmp_path / "dump"
    flags = ["--load-debug-rollout-data", template, "--load-debug-rollout-data-subsample", "0.5",
             "--dump-details", str(dump), "--micro-batch-size", "2", "--run-dir", str(tmp_path / "run")]  # fmt: skip
    records = train(parse_args(_base(tiny_model_dir, *flags)))
    assert records[0]["rollout/samples"] == 4.0  # the subsample, not the 8 saved
    payload = torch.load(dump / "train_data" / "0.pt", weights_only=False)
    assert payload["rollout_id"] == 0 and [s["sample_index"] for s in payload["samples"]] == [0, 1, 6, 7]
    for sample in payload["samples"]:
        n = sample["response_length"]
        assert sample["log_probs"].shape == sample["advantages"].shape == (n,)
        assert torch.isfinite(sample["log_probs"]).all() and len(sample["loss_mask"]) == n
    assert (dump / "tokenizer" / "tokenizer.json").is_file()
    assert len(load_rollout_data(str(dump / "rollout_data" / "{rollout_id}.pkl"), 0)["tokens"]) == 4
