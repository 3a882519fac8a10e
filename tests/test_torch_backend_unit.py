"""The torch training backend on the tiny local model, in-process (no Ray, no engine)."""

from pathlib import Path

import pytest
import torch

from tests.train_args import debug_train_args
from vime.backends.factory import make_backend
from vime.backends.torch_utils import checkpoint as ckpt
from vime.backends.torch_utils.forward import response_logprobs
from vime.backends.train_data import TrainBatch


def _args(model_dir: Path, *extra: str):
    return debug_train_args(model_dir, *extra)


def _rollout_data(rewards=(1.0, -1.0, 1.0, -1.0)) -> dict:
    tokens = [[5, 6, 7, 8, 9, 10], [5, 6, 7, 11, 12], [20, 21, 22, 23], [20, 21, 30, 31, 32, 33, 34]]
    lengths = [3, 2, 1, 4]
    return {
        "tokens": tokens,
        "response_lengths": lengths,
        "rewards": list(rewards),
        "loss_masks": [[1] * n for n in lengths],
        "raw_reward": [1.0, 0.0, 1.0, 0.0],
    }


def test_response_logprobs_match_a_manual_forward(tiny_model_dir):
    backend = make_backend(_args(tiny_model_dir), rank=0, world_size=1)
    assert backend.init() == 0
    batch = TrainBatch.from_rollout_data(_rollout_data())
    batched = backend.compute_logprobs(batch)
    model = backend.model
    for i, (seq, length) in enumerate(zip(batch.tokens, batch.response_lengths, strict=True)):
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([seq])).logits[0]
        manual = torch.log_softmax(logits.float(), -1)[torch.arange(len(seq) - 1), torch.tensor(seq[1:])][
            -length:
        ]
        torch.testing.assert_close(batched[i], manual, atol=1e-5, rtol=1e-5)
    padded, _ = response_logprobs(model, batch.tokens, batch.response_lengths)
    assert padded.shape == (4, 4) and padded[2, 1:].abs().sum() == 0  # padding stays zero


def test_grpo_steps_raise_rewarded_logprobs(tiny_model_dir):
    backend = make_backend(_args(tiny_model_dir), rank=0, world_size=1)
    backend.init()
    batch = TrainBatch.from_rollout_data(_rollout_data())
    before = backend.compute_logprobs(batch)
    first = backend.train(0, batch)
    assert first["ppo_kl"] == pytest.approx(0.0, abs=1e-6)  # old log-probs are this very policy
    assert first["pg_clipfrac"] == 0.0
    for step in range(1, 4):
        backend.train(step, batch)
    after = backend.compute_logprobs(batch)
    assert after[0].sum() > before[0].sum() and after[2].sum() > before[2].sum()  # reward +1
    assert after[1].sum() < before[1].sum() and after[3].sum() < before[3].sum()  # reward -1


def test_ppo_with_critic_and_kl_runs(tiny_model_dir):
    args = _args(tiny_model_dir, "--advantage-estimator", "ppo", "--kl-coef", "0.1", "--kl-ctl", "adaptive",
                 "--kl-target", "0.01", "--kl-horizon", "100", "--use-kl-loss", "--kl-loss-coef", "0.01",
                 "--entropy-coef", "0.01", "--use-tis")  # fmt: skip
    backend = make_backend(args, rank=0, world_size=1)
    backend.init()
    data = _rollout_data()
    data["rollout_log_probs"] = [[-1.0] * n for n in data["response_lengths"]]
    metrics = backend.train(0, TrainBatch.from_rollout_data(data))
    for key in ("critic/value_loss", "pg_loss", "kl_loss", "entropy", "tis", "train_rollout_kl", "kl_coef"):
        assert key in metrics, key
    assert metrics["kl_loss"] == pytest.approx(0.0, abs=1e-6)  # policy == reference before the first step
    assert metrics["entropy"] > 0
    assert metrics["kl_coef"] != 0.1  # the adaptive controller moved


def test_save_then_resume_continues_at_next_step(tiny_model_dir, tmp_path):
    save = tmp_path / "ckpt"
    backend = make_backend(_args(tiny_model_dir, "--save", str(save)), rank=0, world_size=1)
    backend.init()
    batch = TrainBatch.from_rollout_data(_rollout_data())
    backend.train(0, batch)
    backend.train(1, batch)
    backend.save(1)
    assert ckpt.latest_iteration(save) == 1
    reference = backend.compute_logprobs(batch)
    backend.train(2, batch)  # the original run goes on
    expected_after_2 = backend.compute_logprobs(batch)

    resumed = make_backend(_args(tiny_model_dir, "--load", str(save)), rank=0, world_size=1)
    assert resumed.init() == 2  # continues after the saved step
    for got, want in zip(resumed.compute_logprobs(batch), reference, strict=True):
        torch.testing.assert_close(got, want)
    resumed.train(2, batch)  # optimizer state restored: the same update as the original run
    for got, want in zip(resumed.compute_logprobs(batch), expected_after_2, strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)

    backend.save(1)  # saving the same step again moves the old one aside, never deletes it
    assert len(list(save.glob("iter_0000001.replaced-*"))) == 1


def test_load_of_a_step_dir_loads_that_step_not_the_latest(tiny_model_dir, tmp_path):
    """``--load <save>/iter_0000000`` while the marker names step 1: step 0's weights, resume at 1."""
    save = tmp_path / "ckpt"
    backend = make_backend(_args(tiny_model_dir, "--save", str(save)), rank=0, world_size=1)
    backend.init()
    batch = TrainBatch.from_rollout_data(_rollout_data())
    backend.train(0, batch)
    backend.save(0)
    at_step_0 = backend.compute_logprobs(batch)
    backend.train(1, batch)
    backend.save(1)
    assert ckpt.latest_iteration(save) == 1
    resumed = make_backend(
        _args(tiny_model_dir, "--load", str(ckpt.iteration_dir(save, 0))), rank=0, world_size=1
    )
    assert resumed.init() == 1
    for got, want in zip(resumed.compute_logprobs(batch), at_step_0, strict=True):
        torch.testing.assert_close(got, want)


def test_export_writes_a_loadable_hf_dir(tiny_model_dir, tmp_path):
    from transformers import AutoModelForCausalLM

    backend = make_backend(_args(tiny_model_dir), rank=0, world_size=1)
    backend.init()
    backend.train(0, TrainBatch.from_rollout_data(_rollout_data()))
    out = backend.export_weights(tmp_path / "v1")
    assert (out / "model.safetensors").exists() and (out / "tokenizer.json").exists()
    reloaded = AutoModelForCausalLM.from_pretrained(out, local_files_only=True)
    trained = backend.model.state_dict()
    for name, tensor in reloaded.state_dict().items():
        torch.testing.assert_close(tensor, trained[name])


def test_bad_rollout_data_is_one_line():
    data = _rollout_data()
    data["loss_masks"][1] = [1]
    with pytest.raises(ValueError, match="sample 1: loss_mask has 1 entries for 2 response tokens"):
        TrainBatch.from_rollout_data(data)
    with pytest.raises(ValueError, match="lacks rewards"):
        TrainBatch.from_rollout_data({"tokens": [[1, 2]], "response_lengths": [1]})


def mask_first_token(args, rollout_id, rollout_data):
    """A rollout-data post-process used below: drop every response's first token from the loss."""
    assert len(rollout_data["log_probs"]) == len(rollout_data["tokens"])  # log-probs are there already
    for mask in rollout_data["loss_masks"]:
        mask[0] = 0


def test_rollout_data_postprocess_hook_changes_the_loss_mask(tiny_model_dir):
    plain = make_backend(_args(tiny_model_dir), rank=0, world_size=1)
    plain.init()
    hooked = make_backend(
        _args(tiny_model_dir, "--rollout-data-postprocess-path", "test_torch_backend_unit.mask_first_token"),
        rank=0,
        world_size=1,
    )
    hooked.init()
    batch = TrainBatch.from_rollout_data(_rollout_data())
    assert hooked.train(0, batch)["pg_loss"] != pytest.approx(plain.train(0, batch)["pg_loss"])
