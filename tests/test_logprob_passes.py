"""Which forward passes the Megatron backend runs before training, on the CPU.

slime skips the policy's log-prob pass where its numbers are known without it: the engine's
(``--use-rollout-logprobs``), or the training forward's own when a rollout is one optimizer step
(``can_reuse_log_probs_in_loss``). The passes are counted on the real backend; the skipped pass must
not change the training (same weights as with the pass forced back in). The CPU stand-ins are the
ones of tests/test_megatron_backend_cpu.py (megatron_cpu_support, a torch AdamW).
"""

from __future__ import annotations

from argparse import Namespace
from pathlib import Path

import pytest
import torch

from vime.backends.train_data import TrainBatch, old_log_probs_source

pytest.importorskip("megatron.core")

from megatron_cpu_support import megatron_on_cpu


def _flags(**over) -> Namespace:
    base = dict(
        use_rollout_logprobs=False, loss_type="policy_loss", kl_coef=0.0, use_critic=False,
        keep_old_actor=False, use_opd=False, advantage_estimator="grpo",
        rollout_data_postprocess_path=None, save_debug_train_data=None,
    )  # fmt: skip
    return Namespace(**(base | over))


@pytest.mark.parametrize(
    "over,steps,has_rollout,want",
    [
        ({}, 1, True, "in_loss"),
        ({}, 2, True, "recompute"),
        ({"use_rollout_logprobs": True}, 2, True, "rollout"),
        ({"use_rollout_logprobs": True}, 1, False, "recompute"),
        ({"kl_coef": 0.1}, 1, True, "recompute"),
        ({"advantage_estimator": "gspo"}, 1, True, "recompute"),
        ({"keep_old_actor": True}, 1, True, "recompute"),
        ({"loss_type": "sft_loss"}, 1, True, "recompute"),
        ({"rollout_data_postprocess_path": "m.f"}, 1, True, "recompute"),
        ({"save_debug_train_data": "/x/{rollout_id}.pt"}, 1, True, "recompute"),
    ],
)
def test_old_log_probs_source_follows_slime(over, steps, has_rollout, want) -> None:
    assert old_log_probs_source(_flags(**over), steps, has_rollout) == want


@pytest.fixture(scope="module")
def megatron_cpu():
    yield from megatron_on_cpu()


def _backend(model_dir: Path, *extra: str):
    from vime.backends.megatron_utils.backend import MegatronTrainBackend
    from vime.backends.torch_utils.model import make_optimizer
    from vime.utils.arguments import parse_args

    args = parse_args(
        [
            "--debug-train-only", "--hf-checkpoint", str(model_dir), "--rollout-batch-size", "2",
            "--n-samples-per-prompt", "2", "--num-rollout", "4", "--micro-batch-size", "2",
            "--lr", "1e-2", "--use-kl-loss", "--kl-loss-coef", "0.0", *extra,
        ]
    )  # fmt: skip

    class CpuMegatronBackend(MegatronTrainBackend):
        optimizer_factory = staticmethod(lambda model: make_optimizer(args, model.parameters(), args.lr))

    backend = CpuMegatronBackend(args, 0, 1)
    backend.init()
    return backend


def _batch() -> TrainBatch:
    tokens = [[5, 6, 7, 8, 9, 10], [5, 6, 7, 11, 12], [20, 21, 22, 23], [20, 21, 30, 31, 32, 33, 34]]
    lengths = [3, 2, 1, 4]
    return TrainBatch.from_rollout_data(
        {
            "tokens": tokens,
            "response_lengths": lengths,
            "rewards": [1.0, -1.0, 1.0, -1.0],
            "rollout_log_probs": [[-2.0] * n for n in lengths],
        }
    )


def _count_passes(monkeypatch, backend) -> dict[str, int]:
    """Forward-only passes per model (policy / reference), counted where every pass goes through."""
    counts = {"policy": 0, "reference": 0}
    for name, actor in (("policy", backend.actor), ("reference", backend.ref)):
        original = actor.compute_log_probs_micro

        def counted(micro, _original=original, _name=name):
            counts[_name] += 1
            return _original(micro)

        monkeypatch.setattr(actor, "compute_log_probs_micro", counted)
    return counts


@pytest.mark.parametrize(
    "extra,policy_passes",
    [((), 0), (("--global-batch-size", "2"), 1), (("--use-rollout-logprobs",), 0)],
    ids=["one_step_in_loss", "two_steps_recompute", "rollout_logprobs"],
)
def test_policy_pass_runs_only_where_needed(megatron_cpu, tiny_model_dir, monkeypatch, extra, policy_passes):
    backend = _backend(tiny_model_dir, *extra)
    counts = _count_passes(monkeypatch, backend)
    metrics = backend.train(0, _batch())
    assert counts == {"policy": policy_passes, "reference": 1}
    assert metrics["old_log_probs_pass"] == float(policy_passes)
    if "--use-rollout-logprobs" in extra:  # the ratio's old log-probs are the engine's
        assert metrics["train_rollout_kl"] == 0.0


def test_skipped_pass_trains_the_same_weights(megatron_cpu, tiny_model_dir, monkeypatch) -> None:
    """One step per rollout: old log-probs from the training forward give the weights that a separate
    pass gives (fp32 on the CPU: within 1e-6), over two rollouts."""
    import vime.backends.megatron_utils.backend as backend_module

    skipping, passing = _backend(tiny_model_dir), _backend(tiny_model_dir)
    for rollout_id in range(2):
        got = skipping.train(rollout_id, _batch())
        with monkeypatch.context() as m:
            m.setattr(backend_module, "old_log_probs_source", lambda *a: "recompute")
            want = passing.train(rollout_id, _batch())
        assert (got["old_log_probs_pass"], want["old_log_probs_pass"]) == (0.0, 1.0)
        for key in ("pg_loss", "ppo_kl", "grad_norm", "train_rollout_kl", "kl_loss"):
            assert got[key] == pytest.approx(want[key], rel=1e-5, abs=1e-6), key
    moved = 0.0
    for (name, p), (_, q) in zip(
        skipping.actor.model.named_parameters(), passing.actor.model.named_parameters(), strict=True
    ):
        torch.testing.assert_close(p, q, atol=1e-6, rtol=1e-6, msg=name)
        moved = max(moved, (p - skipping.ref.model.state_dict()[name]).abs().max().item())
    assert moved > 1e-4  # the policy moved, so the equality is not trivial
