"""What the presets build, and their rewards (the defaults themselves: ``vime.utils.args.presets``).

``tiny-cpu`` trains the project's tiny local Qwen2-shaped model with GRPO on the synthetic
arithmetic task (``a+b``, operands 0..4), one CPU vLLM engine, one torch trainer rank and a
weight update every step, rewarded by the plain ``math`` verifier (1 for a correct
``\\boxed{}`` answer, else 0). A randomly initialised model never writes a correct boxed
answer, so the preset starts from a weak local warm start (:mod:`vime.warm_start`:
a short supervised fine-tune on noisy answers) that is right about a quarter of the time.
The shaped reward of earlier versions stays available as ``--custom-rm-path
vime.presets.tiny_cpu_reward`` for runs from the random model.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Any

from vime.utils.args.presets import PRESETS, prepare_preset, preset_defaults

__all__ = ["PRESETS", "prepare_preset", "prepare_tiny_cpu", "preset_defaults", "tiny_cpu_reward"]

TINY_CPU_DATASET_ROWS = 2048
TINY_CPU_MAX_OPERAND = 4


def cache_dir() -> Path:
    """Where presets keep what they build (``VIME_CACHE_DIR``, else ``~/.cache/vime``)."""
    return Path(os.environ.get("VIME_CACHE_DIR", Path.home() / ".cache" / "vime"))


def prepare_tiny_cpu(args: argparse.Namespace) -> None:
    """Build what ``tiny-cpu`` needs and the user did not give: the warm-started model and the data."""
    root = cache_dir() / "tiny-cpu"
    if args.hf_checkpoint is None:
        model_dir = root / "model"
        if not (model_dir / "config.json").exists():
            from vime.utils.tiny_model import build_tiny_model

            build_tiny_model(model_dir, seed=0)
        from vime.warm_start import cached_warm_start

        args.hf_checkpoint = str(cached_warm_start(model_dir, root))
    if args.prompt_data is None:
        data = root / f"arithmetic_plus_{TINY_CPU_MAX_OPERAND}.jsonl"
        if not data.exists():
            from vime.rollout.synthetic import write_arithmetic_dataset

            write_arithmetic_dataset(
                data, TINY_CPU_DATASET_ROWS, seed=0, max_operand=TINY_CPU_MAX_OPERAND, operators="+"
            )
        args.prompt_data = str(data)


_FIRST_NUMBER = re.compile(r"-?\d+")


def shaped_arithmetic_reward(response: str, label: str, boxed_correct: bool) -> float:
    """1 for a correct ``\\boxed{}`` answer; otherwise partial credit that a random model can find.

    Up to 0.2 for the share of characters that are digits (writing numbers at all), 0.3 when
    the first digit written is the answer's first digit, and 0.4 more when the first number
    written is the whole answer (right value, missing box). A randomly initialised model earns
    the first part by chance, which is what lets it start learning within a few steps.
    """
    if boxed_correct:
        return 1.0
    text = response.strip()
    if not text:
        return 0.0
    answer = str(label).strip()
    score = 0.2 * sum(ch.isdigit() for ch in text) / len(text)
    first_digit = next((ch for ch in text if ch.isdigit()), None)
    if first_digit is not None and answer and first_digit == answer.lstrip("-")[:1]:
        score += 0.3
        first = _FIRST_NUMBER.search(text)
        if first is not None and first.group() == answer:
            score += 0.4
    return score


async def tiny_cpu_reward(args: Any, sample: Any, **kwargs: Any) -> float:
    """The hub's ``math`` verdict plus shaping, for runs from the random model (opt-in).

    ``--custom-rm-path vime.presets.tiny_cpu_reward --hf-checkpoint <random tiny model>``;
    the preset itself uses the plain ``math`` reward on the warm-started model.
    """
    from vime.rollout.rm_hub import rule_based_reward

    boxed_correct = bool(rule_based_reward("math", sample))
    return shaped_arithmetic_reward(sample.response or "", str(sample.label), boxed_correct)
