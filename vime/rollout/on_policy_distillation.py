"""On-policy distillation with a teacher vLLM engine: slime's ``slime.rollout.on_policy_distillation``.

slime's example wires it as the reward (``--custom-rm-path ...on_policy_distillation.reward_func
--custom-reward-post-process-path ...on_policy_distillation.post_process_rewards --rm-url
http://teacher:port/generate``) with ``--use-opd --opd-type sglang``; vime's translation reads
``vime.rollout.on_policy_distillation`` and ``--opd-type vllm``, and the same launch runs here.

``reward_func`` asks the teacher for the log-probability of every token of the student's sample
(vLLM's ``prompt_logprobs`` on ``/v1/completions``, one generated token that is discarded), keeps
those of the response on ``sample.teacher_log_probs`` and returns the task reward: the rm hub's
``--rm-type`` verdict when one is set (OPD beside the RL reward), else 0 (pure distillation, as in
slime). ``post_process_rewards`` returns those rewards through vime's default post-process; the
learning signal of distillation is the reverse-KL term ``--opd-kl-coef`` adds to the advantages.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from vime.rollout.reward_post_process import post_process_rewards as default_post_process
from vime.rollout.rm_hub.reward_config import RewardConfig
from vime.utils.http_utils import post
from vime.utils.types import Sample

__all__ = ["post_process_rewards", "reward_func", "teacher_log_probs_from_answer", "teacher_url"]

COMPLETIONS_ROUTE = "/v1/completions"


def teacher_url(rm_url: str) -> str:
    """The teacher's completions route, whatever generate route ``--rm-url`` names (SGLang's or vLLM's)."""
    if not rm_url:
        raise ValueError("OPD with a teacher engine needs --rm-url http://<teacher host>:<port>")
    parts = urlsplit(rm_url if "://" in rm_url else f"http://{rm_url}")
    return urlunsplit((parts.scheme, parts.netloc, COMPLETIONS_ROUTE, "", ""))


def teacher_request(tokens: list[int]) -> dict[str, Any]:
    """Score ``tokens`` (prompt + response) with the teacher: prompt log-probs of the tokens themselves."""
    return {
        "prompt": [int(t) for t in tokens],
        "max_tokens": 1,
        "temperature": 1.0,  # prompt log-probs come from raw logits; OPD validation asks for T = 1
        "prompt_logprobs": 0,
    }


def teacher_log_probs_from_answer(
    answer: dict[str, Any], tokens: list[int], response_length: int
) -> list[float]:
    """The teacher's log-probs of the last ``response_length`` tokens, from vLLM's ``prompt_logprobs``.

    Entry j of ``prompt_logprobs`` maps token ids (as strings) to ``{"logprob", ...}`` for position j
    (the first is None: nothing predicts it); with ``prompt_logprobs: 0`` it holds the token itself.
    """
    entries = answer["choices"][0].get("prompt_logprobs") or answer.get("prompt_logprobs")
    if not entries or len(entries) != len(tokens):
        raise RuntimeError(
            f"the teacher returned {len(entries or [])} prompt log-probs for {len(tokens)} tokens: "
            "is --rm-url a vLLM server?"
        )
    out: list[float] = []
    for position in range(len(tokens) - response_length, len(tokens)):
        entry = entries[position] or {}
        scored = entry.get(str(tokens[position])) or entry.get(tokens[position])
        if scored is None:
            raise RuntimeError(f"the teacher's prompt log-probs lack token {tokens[position]} at {position}")
        out.append(float(scored["logprob"] if isinstance(scored, dict) else scored))
    return out


async def reward_func(args: Any, sample: Sample, **kwargs: Any) -> float:
    """Fill ``sample.teacher_log_probs`` from the teacher at ``--rm-url``; return the task reward (or 0)."""
    cfg = RewardConfig.from_args(args)
    answer = await post(teacher_url(cfg.rm_url), teacher_request(sample.tokens))
    sample.teacher_log_probs = teacher_log_probs_from_answer(answer, sample.tokens, sample.response_length)
    if cfg.rm_type:
        from vime.rollout.rm_hub import rule_based_reward

        return float(rule_based_reward(cfg.rm_type, sample))
    return 0.0


def post_process_rewards(args: Any, samples: list[Sample], **kwargs: Any) -> tuple[list[float], list[float]]:
    """Every sample must carry the teacher's log-probs of its response; rewards as vime's default."""
    for sample in samples:
        if sample.teacher_log_probs is None or len(sample.teacher_log_probs) != sample.response_length:
            got = None if sample.teacher_log_probs is None else len(sample.teacher_log_probs)
            raise ValueError(
                f"sample {sample.index}: {got} teacher log-probs for {sample.response_length} response tokens; "
                "score it with vime.rollout.on_policy_distillation.reward_func (--custom-rm-path)"
            )
    return default_post_process(args, samples)
