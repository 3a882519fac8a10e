"""SFT as slime runs it: a rollout function that reads chat data instead of generating (slime's name).

``--rollout-function-path vime.rollout.sft_rollout.generate_rollout --input-key messages --loss-type
sft_loss`` (slime's ``scripts/run-qwen3-4B-base-sft.sh``, translated): each prompt row holds a whole
(multi-turn) conversation; its tokens and loss mask come from the chat template
(``vime/utils/mask_utils.py``: 1 exactly on the assistant turns), the "response" is everything from
the first assistant token on, and the reward is 0. The launch is the RL one; with
``--debug-train-only`` no engine is started.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from vime.utils.args.defaults import config_from_args
from vime.utils.mask_utils import MultiTurnLossMaskGenerator
from vime.utils.types import RolloutFnTrainOutput, Sample

__all__ = ["generate_rollout", "sft_sample"]

logger = logging.getLogger(__name__)

_GENERATORS: dict[tuple[str, str], MultiTurnLossMaskGenerator] = {}


@dataclass(frozen=True)
class SftConfig:
    """The flags the SFT rollout reads."""

    hf_checkpoint: str | None = None
    loss_mask_type: str = "qwen"
    rollout_batch_size: int | None = None

    @classmethod
    def from_args(cls, args: Any) -> SftConfig:
        return config_from_args(cls, args)


def _generator(args: Any) -> MultiTurnLossMaskGenerator:
    cfg = SftConfig.from_args(args)
    path, mask_type = cfg.hf_checkpoint, cfg.loss_mask_type
    if (path, mask_type) not in _GENERATORS:
        from transformers import AutoTokenizer

        _GENERATORS[path, mask_type] = MultiTurnLossMaskGenerator(
            AutoTokenizer.from_pretrained(path, local_files_only=True), mask_type
        )
    return _GENERATORS[path, mask_type]


def sft_sample(sample: Sample, generator: MultiTurnLossMaskGenerator) -> Sample:
    """Fill ``tokens``, ``response_length`` and ``loss_mask`` of one chat sample (its prompt: the messages)."""
    messages = sample.prompt
    if not isinstance(messages, list) or not all(isinstance(m, dict) and "role" in m for m in messages):
        raise ValueError(
            f"sample {sample.index}: an SFT row must hold a list of chat messages ({{'role', 'content'}}) "
            "under --input-key (and no --apply-chat-template)"
        )
    token_ids, loss_mask = generator.get_loss_mask(messages, tools=(sample.metadata or {}).get("tools"))
    response_length = generator.get_response_lengths([loss_mask])[0]
    if response_length == 0:
        raise ValueError(f"sample {sample.index}: the conversation has no assistant turn to train on")
    sample.tokens = token_ids
    sample.response_length = response_length
    sample.loss_mask = loss_mask[-response_length:]
    sample.reward = 0.0
    sample.status = Sample.Status.COMPLETED
    return sample


def generate_rollout(
    args: Any, rollout_id: int, data_source: Any, evaluation: bool = False
) -> RolloutFnTrainOutput:
    """``--rollout-batch-size`` conversations from the data source as training samples (no engine)."""
    if evaluation:
        raise ValueError(
            "the SFT rollout has no evaluation: drop --eval-interval or give --eval-function-path"
        )
    generator = _generator(args)
    groups = data_source.get_samples(int(SftConfig.from_args(args).rollout_batch_size))
    for group in groups:
        for sample in group:
            sft_sample(sample, generator)
    if rollout_id == 0 and groups:
        first = groups[0][0]
        logger.info(
            "sft_rollout: first sample has %d tokens, %d trained: %r",
            len(first.tokens),
            sum(first.loss_mask),
            generator.get_text_from_loss_mask(first.tokens, [0] * first.prompt_length + first.loss_mask)[:2],
        )
    return RolloutFnTrainOutput(samples=groups, metrics={})
