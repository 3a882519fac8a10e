"""Reward functions for learning runs of random-weight models on the GPU (slime's custom-RM signature).

A random model never answers an arithmetic prompt, so the math reward is 0 everywhere and GRPO has no
signal. ``known_token_reward`` gives one from the first step: the model's vocabulary (151,936 ids for
a Qwen3 shape) is far larger than the tokenizer vime trains locally, so a random model writes a known
token at about 1 position in 150, and learning shows as that share rising.
"""

from __future__ import annotations

import functools
from typing import Any


@functools.lru_cache(maxsize=4)
def _known_ids(checkpoint: str) -> tuple[int, frozenset[int]]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    return len(tokenizer), frozenset(tokenizer.all_special_ids)


def known_token_reward(args: Any, sample: Any, **kwargs: Any) -> float:
    """The share of the answer's positions (out of --rollout-max-response-len, so stopping early
    does not pay) holding a non-special token the tokenizer knows."""
    size, special = _known_ids(args.hf_checkpoint)
    response = sample.tokens[len(sample.tokens) - sample.response_length :]
    hits = sum(1 for token in response if token < size and token not in special)
    return hits / args.rollout_max_response_len


async def generate_with_engine_defaults(
    args: Any, sample: Any, sampling_params: dict, evaluation: bool = False
):
    """vime's default generate with the request as sent up to 2026-12-02: vLLM's own defaults (0.26's
    cumulative output kind, the server detokenizing every token). The same-session baseline of the
    final-only request (``generate.engine_request_params``); bench use only, and it sets that for the
    whole rollout process it runs in."""
    from vime.rollout import generate as generate_module

    generate_module.engine_request_params = dict
    return await generate_module.generate(args, sample, sampling_params, evaluation)
