"""Small slime-style hooks the training-mode tests load by dotted path (each changes the result visibly)."""

from __future__ import annotations

import torch

from vime.backends.loss_hooks import policy_loss_function, sum_of_sample_mean_reducer


def negated_loss(args, batch, logits, sum_of_sample_mean):
    loss, _ = policy_loss_function(args, batch, logits, sum_of_sample_mean)
    return -loss, {"loss": -loss.detach()}


def doubled_advantages(args, rollout_data):
    from vime.backends.loss_hooks import grpo_advantage_function

    grpo_advantage_function(args, rollout_data)
    rollout_data["advantages"] = [2 * a for a in rollout_data["advantages"]]


def reject_all_tis(args, *, pg_loss, train_log_probs, rollout_log_probs, loss_masks, **kwargs):
    return pg_loss, [torch.zeros_like(m) for m in loss_masks], {}


def doubled_reducer(total_lengths, response_lengths, loss_masks, calculate_per_token_loss):
    reduce = sum_of_sample_mean_reducer(total_lengths, response_lengths, loss_masks, calculate_per_token_loss)
    return lambda values: 2 * reduce(values)


async def fake_generate(args, sample, sampling_params):
    """A generate hook without an engine: the response is a wrong answer."""
    from vime.utils.types import Sample

    sample.tokens = [1, 2, 3, 4]
    sample.response = "\\boxed{7}"
    sample.response_length = 2
    sample.status = Sample.Status.COMPLETED
    return sample


def answer_two(args, sample, *, rollout_id=None):
    """A rollout sample hook that rewrites the response before it is scored."""
    sample.response = "\\boxed{2}"
    sample.metadata["hooked_at"] = rollout_id
