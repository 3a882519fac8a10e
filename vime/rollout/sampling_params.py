"""vLLM sampling params from slime's rollout flags (max_new_tokens → max_tokens, no_stop_trim →
include_stop_str_in_output); below both the generate hook and the run state that hands them out."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from vime.utils.args.defaults import flag_value


def build_sampling_params(
    args: Namespace,
    *,
    temperature: float | None = None,
    top_p: float | None = None,
    top_k: int | None = None,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """vLLM sampling params from slime's rollout flags (max_new_tokens → max_tokens, no_stop_trim → include_stop_str_in_output)."""
    params: dict[str, Any] = {
        "temperature": args.rollout_temperature if temperature is None else temperature,
        "top_p": args.rollout_top_p if top_p is None else top_p,
        "top_k": args.rollout_top_k if top_k is None else top_k,
        "max_tokens": args.rollout_max_response_len if max_tokens is None else max_tokens,
        "skip_special_tokens": bool(flag_value(args, "rollout_skip_special_tokens")),
        "include_stop_str_in_output": True,
        "spaces_between_special_tokens": False,
        "logprobs": 0,  # the sampled token's own log probability
    }
    if flag_value(args, "rollout_stop"):
        params["stop"] = list(args.rollout_stop)
    if flag_value(args, "rollout_stop_token_ids"):
        params["stop_token_ids"] = list(args.rollout_stop_token_ids)
    return params
