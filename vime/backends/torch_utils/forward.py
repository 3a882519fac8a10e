"""Forward passes on padded micro-batches: response-token log-probs, entropy and values."""

from __future__ import annotations

import torch
from torch import nn

from vime.algorithms.policy_loss import entropy_from_logits


def pad_inputs(tokens: list[list[int]], pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ``input_ids`` and ``attention_mask`` for a list of token sequences."""
    width = max(len(t) for t in tokens)
    ids = torch.full((len(tokens), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(tokens), width), dtype=torch.long)
    for i, seq in enumerate(tokens):
        ids[i, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        mask[i, : len(seq)] = 1
    return ids, mask


def response_positions(
    tokens: list[list[int]], response_lengths: list[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gather indices ``[batch, max_response]`` of the logits predicting each response token.

    Token ``t`` is predicted by the logits at position ``t - 1``; rows are padded with
    position 0 and a 0 in the validity mask.
    """
    width = max(response_lengths) if response_lengths else 0
    index = torch.zeros((len(tokens), width), dtype=torch.long)
    valid = torch.zeros((len(tokens), width), dtype=torch.bool)
    for i, (seq, length) in enumerate(zip(tokens, response_lengths, strict=True)):
        start = len(seq) - length - 1
        index[i, :length] = torch.arange(start, start + length)
        valid[i, :length] = True
    return index, valid


def response_logprobs(
    model: nn.Module,
    tokens: list[list[int]],
    response_lengths: list[int],
    with_entropy: bool = False,
    temperature: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs ``[batch, max_response]`` of the response tokens (0 on padding), and entropy if asked.

    ``temperature`` divides the logits, as the engine did when sampling.
    """
    input_ids, attention_mask = pad_inputs(tokens)
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
    index, valid = response_positions(tokens, response_lengths)
    picked = torch.gather(logits, 1, index.unsqueeze(-1).expand(-1, -1, logits.shape[-1])).float()
    if temperature != 1.0:
        picked = picked / temperature
    targets = torch.gather(input_ids, 1, (index + 1).clamp(max=input_ids.shape[1] - 1))
    log_probs = torch.log_softmax(picked, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    log_probs = log_probs * valid
    entropy = entropy_from_logits(picked) * valid if with_entropy else None
    return log_probs, entropy


def response_values(critic: nn.Module, tokens: list[list[int]], response_lengths: list[int]) -> torch.Tensor:
    """The critic's value of the state before each response token, ``[batch, max_response]``."""
    input_ids, attention_mask = pad_inputs(tokens)
    values = critic(input_ids=input_ids, attention_mask=attention_mask)
    index, valid = response_positions(tokens, response_lengths)
    return torch.gather(values, 1, index).float() * valid
