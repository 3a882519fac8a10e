"""Named sets of defaults (``--preset NAME``); any flag given on the command line still wins.

``tiny-cpu`` trains the project's tiny local Qwen2-shaped model with GRPO on the synthetic
arithmetic task (``a+b``, operands 0..4), one CPU vLLM engine, one torch trainer rank and a
weight update every step, rewarded by the plain ``math`` verifier (1 for a correct
``\\boxed{}`` answer, else 0). A randomly initialised model never writes a correct boxed
answer, so the preset starts from a weak local warm start (:mod:`vime.utils.warm_start`:
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

PRESETS: dict[str, dict[str, Any]] = {
    "tiny-cpu": {
        "train_backend": "torch",
        "actor_num_nodes": 1,
        "actor_num_gpus_per_node": 1,
        "rollout_num_gpus": 0,
        "rollout_num_engines": 1,
        "advantage_estimator": "grpo",
        "rollout_batch_size": 8,
        "n_samples_per_prompt": 8,
        "micro_batch_size": 16,
        "num_rollout": 20,
        "rollout_max_response_len": 8,
        "rollout_temperature": 1.0,
        "apply_chat_template": True,
        "input_key": "input",
        "label_key": "label",
        "rollout_shuffle": True,
        "rm_type": "math",
        "lr": 1e-3,  # the warm start is fragile: without the KL term, 4 of 5 trials broke its format
        "use_kl_loss": True,  # low-variance KL to the warm start keeps the format while RL moves the sums
        "kl_loss_coef": 0.1,
        "kl_loss_type": "low_var_kl",
        "clip_grad": 1.0,
        "eps_clip": 0.2,
        "entropy_coef": 0.0,
        "update_weights_interval": 1,
    },
}

TINY_CPU_DATASET_ROWS = 2048
TINY_CPU_MAX_OPERAND = 4


def preset_defaults(name: str) -> dict[str, Any]:
    """The defaults of preset ``name``; a KeyError carries a one-line message naming the choices."""
    if name not in PRESETS:
        raise KeyError(f"unknown --preset {name!r}: choose one of {', '.join(sorted(PRESETS))}")
    return dict(PRESETS[name])


def cache_dir() -> Path:
    """Where presets keep what they build (``VIME_CACHE_DIR``, else ``~/.cache/vime``)."""
    return Path(os.environ.get("VIME_CACHE_DIR", Path.home() / ".cache" / "vime"))


def prepare_preset(name: str | None, args: argparse.Namespace) -> None:
    """Build what a preset needs and the user did not give: the warm-started model and the data."""
    if name != "tiny-cpu":
        return
    root = cache_dir() / "tiny-cpu"
    if args.hf_checkpoint is None:
        model_dir = root / "model"
        if not (model_dir / "config.json").exists():
            from vime.utils.tiny_model import build_tiny_model

            build_tiny_model(model_dir, seed=0)
        from vime.utils.warm_start import cached_warm_start

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
