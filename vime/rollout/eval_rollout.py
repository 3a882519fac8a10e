"""Evaluation rollouts: every prompt of each eval dataset, ``n_samples_per_eval_prompt`` times.

The datasets come from ``--eval-config`` or ``--eval-prompt-data`` (``vime/utils/eval_config.py``),
each with its own keys, sampling settings, reward and metadata overrides.
"""

from __future__ import annotations

import asyncio
import copy
import json
from argparse import Namespace
from typing import Any

from vime.rollout.generate_and_rm import generate_and_rm
from vime.rollout.generate_state import GenerateState
from vime.rollout.rm_hub.reward_config import RewardConfig
from vime.utils.eval_config import EvalDatasetConfig, EvalFlags, resolve_eval_datasets
from vime.utils.types import RolloutFnEvalOutput, Sample

_DATASETS: dict[tuple, Any] = {}


def eval_dataset_configs(args: Namespace) -> list[EvalDatasetConfig]:
    """The datasets validation resolved (``args.eval_datasets``), or resolved now for a bare namespace."""
    datasets = EvalFlags.from_args(args).eval_datasets
    return list(datasets) if datasets is not None else resolve_eval_datasets(args)


def eval_datasets(args: Namespace) -> list[tuple[str, str]]:
    """(name, path) of every eval dataset."""
    return [(d.name, d.path) for d in eval_dataset_configs(args)]


def _dataset(args: Namespace, cfg: EvalDatasetConfig):
    from vime.rollout.prompt_dataset import PromptDataset, load_tokenizer

    kwargs = cfg.apply_chat_template_kwargs or {}
    key = (
        cfg.path, cfg.input_key, cfg.label_key, cfg.tool_key, cfg.metadata_key, cfg.apply_chat_template,
        json.dumps(kwargs, sort_keys=True), cfg.max_prompt_len, args.hf_checkpoint,
    )  # fmt: skip
    if key not in _DATASETS:
        needs_tokenizer = cfg.apply_chat_template or cfg.max_prompt_len is not None
        _DATASETS[key] = PromptDataset(
            cfg.path,
            tokenizer=load_tokenizer(args.hf_checkpoint, "--apply-chat-template")
            if needs_tokenizer
            else None,
            input_key=cfg.input_key,
            label_key=cfg.label_key,
            metadata_key=cfg.metadata_key,
            tool_key=cfg.tool_key,
            apply_chat_template=cfg.apply_chat_template,
            apply_chat_template_kwargs=kwargs,
            max_prompt_len=cfg.max_prompt_len,
        )
    return _DATASETS[key]


async def _eval_one(args: Namespace, cfg: EvalDatasetConfig) -> dict[str, Any]:
    params = cfg.sampling_params()
    samples: list[Sample] = []
    for prompt in _dataset(args, cfg).origin_samples:
        for _ in range(cfg.n_samples_per_eval_prompt):
            sample = copy.deepcopy(prompt)
            sample.index = len(samples)
            sample.metadata = cfg.inject_metadata(sample.metadata)
            sample.custom_rm_path = cfg.custom_rm_path
            sample.generate_function_path = cfg.custom_generate_function_path
            samples.append(sample)
    results = await asyncio.gather(
        *(generate_and_rm(args, s, dict(params), evaluation=True) for s in samples)
    )
    flat = [s for item in results for s in (item if isinstance(item, list) else [item])]
    flat.sort(key=lambda s: s.index)
    keys = RewardConfig.from_args(args)
    reward_key = keys.eval_reward_key or keys.reward_key
    return {
        "rewards": [s.reward[reward_key] if reward_key else s.reward for s in flat],
        "truncated": [s.status == Sample.Status.TRUNCATED for s in flat],
        "samples": flat,
    }


async def eval_rollout(args: Namespace, rollout_id: int) -> RolloutFnEvalOutput:
    state = GenerateState(args)
    state.reset()
    data = {cfg.name: await _eval_one(args, cfg) for cfg in eval_dataset_configs(args)}
    return RolloutFnEvalOutput(data=data)
