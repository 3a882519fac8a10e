"""Token log-probs and entropy from vocabulary-parallel logits (each tensor-parallel rank holds a
slice of the vocabulary), without ever gathering the full ``[batch, tokens, vocab]`` logits.

Vocabulary padding (Megatron rounds the vocabulary up) is masked out, so the numbers equal what the
HF model and the vLLM engine compute over the true vocabulary.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

_MASKED = -1e30  # finite, so that 0 * log p stays 0 in the entropy


def _sum_across(t: torch.Tensor, group) -> torch.Tensor:
    """All-reduce (sum) forward, identity backward: every rank owns the gradient of its own slice."""
    if group is None or dist.get_world_size(group) == 1:
        return t
    from megatron.core.tensor_parallel.mappings import reduce_from_tensor_model_parallel_region

    return reduce_from_tensor_model_parallel_region(t)


def vocab_parallel_logprobs_and_entropy(
    logits: torch.Tensor,
    targets: torch.Tensor,
    vocab_start: int,
    true_vocab_size: int,
    group=None,
    with_entropy: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """log p(target) and the entropy per position, both ``[batch, tokens]`` in fp32.

    ``logits`` is this rank's ``[batch, tokens, vocab_slice]``; ``vocab_start`` its first vocabulary id.
    """
    logits = logits.float()
    local_vocab = logits.shape[-1]
    ids = torch.arange(vocab_start, vocab_start + local_vocab, device=logits.device)
    if vocab_start + local_vocab > true_vocab_size:
        logits = logits.masked_fill(ids >= true_vocab_size, _MASKED)
    row_max = logits.detach().max(dim=-1).values
    if group is not None and dist.get_world_size(group) > 1:
        dist.all_reduce(row_max, op=dist.ReduceOp.MAX, group=group)
    shifted = logits - row_max.unsqueeze(-1)
    log_z = torch.log(_sum_across(shifted.exp().sum(dim=-1), group))

    local = targets - vocab_start
    in_slice = (local >= 0) & (local < local_vocab)
    picked = shifted.gather(-1, local.clamp(0, local_vocab - 1).unsqueeze(-1)).squeeze(-1)
    target_logit = _sum_across(picked * in_slice, group)
    log_probs = target_logit - log_z

    entropy = None
    if with_entropy:
        probs = torch.exp(shifted - log_z.unsqueeze(-1))
        entropy = log_z - _sum_across((probs * shifted).sum(dim=-1), group)
    return log_probs, entropy


def _chunked(fn, logits: torch.Tensor, targets: torch.Tensor, chunk: int):
    """``fn`` over ``chunk`` positions at a time (``--log-probs-chunk-size``): the fp32 copy of the
    logits and the softmax exist for one chunk at a time; under autograd each chunk is recomputed
    in the backward pass (activation checkpointing), so the saved tensors stay per chunk too."""
    from torch.utils.checkpoint import checkpoint

    lps, ents = [], []
    for start in range(0, logits.shape[1], chunk):
        piece = (logits[:, start : start + chunk], targets[:, start : start + chunk])
        if torch.is_grad_enabled() and logits.requires_grad:
            lp, ent = checkpoint(fn, *piece, use_reentrant=False)
        else:
            lp, ent = fn(*piece)
        lps.append(lp)
        ents.append(ent)
    return torch.cat(lps, dim=1), (torch.cat(ents, dim=1) if ents[0] is not None else None)


def token_logprobs_from_logits(
    logits: torch.Tensor,
    input_ids: torch.Tensor,
    true_vocab_size: int,
    with_entropy: bool = True,
    temperature: float = 1.0,
    chunk_size: int = -1,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs aligned to ``input_ids``: position t holds log p(token t | tokens < t); position 0 is 0.

    ``temperature`` divides the logits, as the engine did when sampling. Uses the tensor-parallel
    group of ``megatron.core.parallel_state`` when it is initialised. ``chunk_size`` > 0 computes
    that many positions at a time (same numbers, less memory).
    """
    from megatron.core import parallel_state

    group = None
    vocab_start = 0
    if parallel_state.model_parallel_is_initialized():
        group = parallel_state.get_tensor_model_parallel_group()
        vocab_start = parallel_state.get_tensor_model_parallel_rank() * logits.shape[-1]

    def per_position(piece: torch.Tensor, targets: torch.Tensor):
        if temperature != 1.0:
            piece = piece.float() / temperature
        return vocab_parallel_logprobs_and_entropy(
            piece, targets, vocab_start, true_vocab_size, group, with_entropy
        )

    shifted, targets = logits[:, :-1], input_ids[:, 1:]
    if 0 < chunk_size < shifted.shape[1]:
        lp, ent = _chunked(per_position, shifted, targets, chunk_size)
    else:
        lp, ent = per_position(shifted, targets)
    pad = lp.new_zeros(lp.shape[0], 1)
    return torch.cat([pad, lp], dim=1), (torch.cat([pad, ent], dim=1) if ent is not None else None)
