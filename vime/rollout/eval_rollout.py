"""Evaluation rollouts: every prompt of each ``--eval-prompt-data`` dataset, ``--n-samples-per-eval-prompt`` times."""

from __future__ import annotations

import asyncio
import copy
from argparse import Namespace
from typing import Any

from vime.rollout.generate_and_rm import generate_and_rm
from vime.rollout.generate_state import GenerateState
from vime.rollout.sampling_params import build_sampling_params
from vime.utils.args.defaults import flag_value
from vime.utils.types import RolloutFnEvalOutput, Sample

_DATASETS: dict[tuple, Any] = {}


def eval_datasets(args: Namespace) -> list[tuple[str, str]]:
    """``--eval-prompt-data name path [name path ...]`` as (name, path) pairs."""
    items = list(flag_value(args, "eval_prompt_data") or [])
    return list(zip(items[0::2], items[1::2], strict=False))


def _dataset(args: Namespace, path: str):
    from vime.rollout.prompt_dataset import PromptDataset, load_tokenizer

    key = (path, args.hf_checkpoint, bool(flag_value(args, "apply_chat_template")))
    if key not in _DATASETS:
        chat = bool(flag_value(args, "apply_chat_template"))
        max_len = flag_value(args, "eval_max_prompt_len")
        _DATASETS[key] = PromptDataset(
            path,
            tokenizer=load_tokenizer(args.hf_checkpoint, "--apply-chat-template")
            if chat or max_len
            else None,
            input_key=flag_value(args, "eval_input_key") or flag_value(args, "input_key"),
            label_key=flag_value(args, "eval_label_key") or flag_value(args, "label_key"),
            apply_chat_template=chat,
            apply_chat_template_kwargs=flag_value(args, "apply_chat_template_kwargs"),
            max_prompt_len=max_len,
        )
    return _DATASETS[key]


async def eval_rollout(args: Namespace, rollout_id: int) -> RolloutFnEvalOutput:
    state = GenerateState(args)
    state.reset()
    params = build_sampling_params(
        args,
        temperature=flag_value(args, "eval_temperature"),
        top_p=flag_value(args, "eval_top_p"),
        top_k=flag_value(args, "eval_top_k"),
        max_tokens=flag_value(args, "eval_max_response_len"),
    )
    if flag_value(args, "eval_min_new_tokens"):
        params["min_tokens"] = args.eval_min_new_tokens
    data: dict[str, dict[str, Any]] = {}
    for name, path in eval_datasets(args):
        samples: list[Sample] = []
        for prompt in _dataset(args, path).origin_samples:
            for _ in range(int(flag_value(args, "n_samples_per_eval_prompt") or 1)):
                sample = copy.deepcopy(prompt)
                sample.index = len(samples)
                samples.append(sample)
        results = await asyncio.gather(
            *(generate_and_rm(args, s, dict(params), evaluation=True) for s in samples)
        )
        flat = [s for item in results for s in (item if isinstance(item, list) else [item])]
        flat.sort(key=lambda s: s.index)
        reward_key = flag_value(args, "eval_reward_key") or flag_value(args, "reward_key")
        data[name] = {
            "rewards": [s.reward[reward_key] if reward_key else s.reward for s in flat],
            "truncated": [s.status == Sample.Status.TRUNCATED for s in flat],
            "samples": flat,
        }
    return RolloutFnEvalOutput(data=data)
