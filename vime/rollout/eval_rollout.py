"""Evaluation rollouts: every prompt of each ``--eval-prompt-data`` dataset, ``--n-samples-per-eval-prompt`` times."""

from __future__ import annotations

import asyncio
import copy
from argparse import Namespace
from typing import Any

from vime.rollout.generate_and_rm import generate_and_rm
from vime.rollout.generate_state import GenerateState
from vime.rollout.sampling_params import build_sampling_params
from vime.utils.types import RolloutFnEvalOutput, Sample

_DATASETS: dict[tuple, Any] = {}


def eval_datasets(args: Namespace) -> list[tuple[str, str]]:
    """``--eval-prompt-data name path [name path ...]`` as (name, path) pairs."""
    items = list(getattr(args, "eval_prompt_data", None) or [])
    return list(zip(items[0::2], items[1::2], strict=False))


def _dataset(args: Namespace, path: str):
    from vime.rollout.prompt_dataset import PromptDataset, load_tokenizer

    key = (path, args.hf_checkpoint, bool(getattr(args, "apply_chat_template", False)))
    if key not in _DATASETS:
        chat = bool(getattr(args, "apply_chat_template", False))
        max_len = getattr(args, "eval_max_prompt_len", None)
        _DATASETS[key] = PromptDataset(
            path,
            tokenizer=load_tokenizer(args.hf_checkpoint, "--apply-chat-template")
            if chat or max_len
            else None,
            input_key=getattr(args, "eval_input_key", None) or getattr(args, "input_key", "input"),
            label_key=getattr(args, "eval_label_key", None) or getattr(args, "label_key", None),
            apply_chat_template=chat,
            apply_chat_template_kwargs=getattr(args, "apply_chat_template_kwargs", None),
            max_prompt_len=max_len,
        )
    return _DATASETS[key]


async def eval_rollout(args: Namespace, rollout_id: int) -> RolloutFnEvalOutput:
    state = GenerateState(args)
    state.reset()
    params = build_sampling_params(
        args,
        temperature=getattr(args, "eval_temperature", None),
        top_p=getattr(args, "eval_top_p", None),
        top_k=getattr(args, "eval_top_k", None),
        max_tokens=getattr(args, "eval_max_response_len", None),
    )
    if getattr(args, "eval_min_new_tokens", None):
        params["min_tokens"] = args.eval_min_new_tokens
    data: dict[str, dict[str, Any]] = {}
    for name, path in eval_datasets(args):
        samples: list[Sample] = []
        for prompt in _dataset(args, path).origin_samples:
            for _ in range(int(getattr(args, "n_samples_per_eval_prompt", 1) or 1)):
                sample = copy.deepcopy(prompt)
                sample.index = len(samples)
                samples.append(sample)
        results = await asyncio.gather(
            *(generate_and_rm(args, s, dict(params), evaluation=True) for s in samples)
        )
        flat = [s for item in results for s in (item if isinstance(item, list) else [item])]
        flat.sort(key=lambda s: s.index)
        reward_key = getattr(args, "eval_reward_key", None) or getattr(args, "reward_key", None)
        data[name] = {
            "rewards": [s.reward[reward_key] if reward_key else s.reward for s in flat],
            "truncated": [s.status == Sample.Status.TRUNCATED for s in flat],
            "samples": flat,
        }
    return RolloutFnEvalOutput(data=data)
