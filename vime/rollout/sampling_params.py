"""vLLM sampling params from slime's rollout flags (max_new_tokens → max_tokens, no_stop_trim →
include_stop_str_in_output); below both the generate hook and the run state that hands them out."""

from __future__ import annotations

from argparse import Namespace
from dataclasses import dataclass
from typing import Any

from vime.utils.args.defaults import config_from_args


@dataclass(frozen=True)
class SamplingConfig:
    """slime's rollout sampling flags, built once per rollout (and per sample where a generate hook
    asks for them again)."""

    rollout_temperature: float = 1.0
    rollout_top_p: float = 1.0
    rollout_top_k: int = -1
    rollout_max_response_len: int = 1024
    rollout_skip_special_tokens: bool = False
    rollout_stop: tuple[str, ...] = ()
    rollout_stop_token_ids: tuple[int, ...] = ()

    @classmethod
    def from_args(cls, args: Any) -> SamplingConfig:
        as_tuple = lambda values: tuple(values or ())  # noqa: E731
        return config_from_args(
            cls,
            args,
            dests={
                "rollout_stop": ("rollout_stop", as_tuple),
                "rollout_stop_token_ids": ("rollout_stop_token_ids", as_tuple),
            },
        )


def build_sampling_params(
    args: Namespace,
    *,
    temperature: float | None = None,
    top_p: float | None = None,
    top_k: int | None = None,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """vLLM sampling params from slime's rollout flags (max_new_tokens → max_tokens, no_stop_trim → include_stop_str_in_output)."""
    cfg = SamplingConfig.from_args(args)
    params: dict[str, Any] = {
        "temperature": cfg.rollout_temperature if temperature is None else temperature,
        "top_p": cfg.rollout_top_p if top_p is None else top_p,
        "top_k": cfg.rollout_top_k if top_k is None else top_k,
        "max_tokens": cfg.rollout_max_response_len if max_tokens is None else max_tokens,
        "skip_special_tokens": bool(cfg.rollout_skip_special_tokens),
        "include_stop_str_in_output": True,
        "spaces_between_special_tokens": False,
        "logprobs": 0,  # the sampled token's own log probability
    }
    if cfg.rollout_stop:
        params["stop"] = list(cfg.rollout_stop)
    if cfg.rollout_stop_token_ids:
        params["stop_token_ids"] = list(cfg.rollout_stop_token_ids)
    return params


@dataclass(frozen=True)
class ContextLimits:
    """slime's ``--rollout-max-context-len`` / ``--eval-max-context-len``: the most tokens a sample's
    prompt and response may hold together (None: no cap beyond ``max_tokens``).

    Validation fills the eval limit from the rollout one; a namespace that skipped validation
    (a plugin's, a test's) gets the same fallback here.
    """

    rollout_max_context_len: int | None = None
    eval_max_context_len: int | None = None

    @classmethod
    def from_args(cls, args: Any) -> ContextLimits:
        return config_from_args(cls, args)

    def limit(self, evaluation: bool) -> int | None:
        if evaluation and self.eval_max_context_len is not None:
            return self.eval_max_context_len
        return self.rollout_max_context_len

    def fit(self, max_tokens: int, used_tokens: int, evaluation: bool) -> int:
        """``max_tokens`` shrunk so that ``used_tokens`` (prompt and response so far) plus the new
        tokens stay within the limit; 0 or less when the sample already fills it."""
        limit = self.limit(evaluation)
        return max_tokens if limit is None else min(max_tokens, limit - used_tokens)
