"""A deliberately weak supervised warm start for the tiny model, built locally in seconds.

A randomly initialised model never writes a correct ``\\boxed{}`` answer, so a verifiable
reward gives GRPO nothing to compare. This module fine-tunes the tiny model (plain torch,
CPU) on the synthetic task's chat-formatted prompts followed by ``\\boxed{answer}<|im_end|>``,
but from a poor teacher: the answer shown is the true one only with probability
``1 - noise`` and otherwise a uniformly random value of the task's answer range. The model
learns the format and a blurred idea of the sums; sampled at temperature 1 it is right
about a quarter of the time, which leaves room for reinforcement learning to sharpen it
with nothing but the verifiable reward.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from vime.rollout.synthetic import PROMPT_TEMPLATE

RECIPE_FILE = "vime_warm_start.json"


@dataclass(frozen=True)
class WarmStartRecipe:
    """Everything that determines the warm-started weights (and so the cache key)."""

    seed: int = 0
    steps: int = 400
    noise: float = 0.5  # share of examples whose shown answer is replaced by a random one
    max_operand: int = 4
    batch_size: int = 32
    lr: float = 3e-3


DEFAULT_RECIPE = WarmStartRecipe()  # what ``--preset tiny-cpu`` trains from


def task_pairs(max_operand: int) -> list[tuple[int, int]]:
    """Every ``a+b`` question of the task (operands ``0..max_operand``)."""
    return [(a, b) for a in range(max_operand + 1) for b in range(max_operand + 1)]


def chat_prompt(tokenizer, a: int, b: int) -> str:
    """The prompt exactly as the rollout side renders it (``--apply-chat-template``)."""
    messages = [{"role": "user", "content": PROMPT_TEMPLATE.format(a=a, op="+", b=b)}]
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.exists() else "none"


def recipe_key(model_dir: Path, recipe: WarmStartRecipe) -> str:
    """A short hash of the recipe and the base weights: a new recipe or base model rebuilds."""
    base = _file_digest(Path(model_dir) / "model.safetensors")
    text = json.dumps({"recipe": asdict(recipe), "base": base}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _examples(tokenizer, recipe: WarmStartRecipe, rng: random.Random, n: int, eos: str):
    """``n`` (token ids, index where the answer starts) pairs with noisy answers."""
    pairs = task_pairs(recipe.max_operand)
    top = 2 * recipe.max_operand
    out = []
    for _ in range(n):
        a, b = rng.choice(pairs)
        shown = a + b if rng.random() >= recipe.noise else rng.randint(0, top)
        prompt_ids = tokenizer(chat_prompt(tokenizer, a, b), add_special_tokens=False)["input_ids"]
        answer_ids = tokenizer(f"\\boxed{{{shown}}}{eos}", add_special_tokens=False)["input_ids"]
        out.append((prompt_ids + answer_ids, len(prompt_ids)))
    return out


def _batch(examples, pad_id: int):
    import torch

    width = max(len(ids) for ids, _ in examples)
    input_ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), width), -100, dtype=torch.long)
    mask = torch.zeros((len(examples), width), dtype=torch.long)
    for row, (ids, start) in enumerate(examples):
        input_ids[row, : len(ids)] = torch.tensor(ids)
        labels[row, start : len(ids)] = torch.tensor(ids[start:])
        mask[row, : len(ids)] = 1
    return input_ids, labels, mask


def fine_tune(model, tokenizer, recipe: WarmStartRecipe, progress=None) -> list[float]:
    """Train ``model`` in place on noisy answers; returns the loss of every step."""
    import torch

    torch.manual_seed(recipe.seed)
    rng = random.Random(recipe.seed)
    eos = tokenizer.eos_token
    pad_id = tokenizer.pad_token_id
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe.lr, weight_decay=0.0)
    model.train()
    losses = []
    for _ in range(recipe.steps):
        input_ids, labels, mask = _batch(_examples(tokenizer, recipe, rng, recipe.batch_size, eos), pad_id)
        loss = model(input_ids=input_ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(float(loss.detach()))
        if progress is not None:
            progress()
    model.eval()
    return losses


def warm_start_tiny_model(
    model_dir: str | Path, out_dir: str | Path, seed: int = 0, steps: int = 400, noise: float = 0.5
) -> Path:
    """Fine-tune the tiny model in ``model_dir`` and write a Hugging Face dir to ``out_dir``.

    Deterministic for a recipe; ``out_dir`` is written whole or not at all (built beside it,
    then renamed), and an existing ``out_dir`` is never overwritten.
    """
    import torch
    from rich.progress import Progress
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_dir, out_dir = Path(model_dir), Path(out_dir)
    if not (model_dir / "config.json").exists():
        raise FileNotFoundError(
            f"warm start: no model in {model_dir}: build it with vime.utils.tiny_model first"
        )
    if out_dir.exists():
        raise FileExistsError(f"warm start: {out_dir} exists: remove it or pick another out_dir")
    recipe = WarmStartRecipe(seed=seed, steps=steps, noise=noise)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    interactive = sys.stderr.isatty()  # a log file or CI gets a line every tenth instead of a bar
    done = [0]

    def tick() -> None:
        done[0] += 1
        if interactive:
            bar.advance(task)
        elif done[0] % max(1, steps // 10) == 0 or done[0] == steps:
            print(
                f"[vime] warm start of the tiny model: {done[0]}/{steps} steps", file=sys.stderr, flush=True
            )

    if not interactive:
        print(f"[vime] warm start of the tiny model ({steps} steps, once; cached in {out_dir.parent})",
              file=sys.stderr, flush=True)  # fmt: skip
    with Progress(transient=True, disable=not interactive) as bar:
        task = bar.add_task("warm start (supervised, noisy answers)", total=steps)
        losses = fine_tune(model, tokenizer, recipe, progress=tick)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-", dir=out_dir.parent))
    try:
        model.save_pretrained(str(staging), safe_serialization=True)
        tokenizer.save_pretrained(str(staging))
        for extra in ("vime_tiny_model.json",):
            if (model_dir / extra).exists():
                shutil.copy2(model_dir / extra, staging / extra)
        record = {"recipe": asdict(recipe), "key": recipe_key(model_dir, recipe), "base": str(model_dir)}
        record["final_loss"] = sum(losses[-10:]) / max(1, len(losses[-10:]))
        (staging / RECIPE_FILE).write_text(json.dumps(record, indent=1) + "\n")
        staging.rename(out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out_dir


def cached_warm_start(
    model_dir: str | Path, cache_root: str | Path, recipe: WarmStartRecipe | None = None
) -> Path:
    """The warm-started model for ``recipe`` (default :data:`DEFAULT_RECIPE`), built once per
    (recipe, base weights) under ``cache_root/warm-start-<key>``."""
    recipe = recipe or DEFAULT_RECIPE
    out_dir = Path(cache_root) / f"warm-start-{recipe_key(Path(model_dir), recipe)}"
    if (out_dir / RECIPE_FILE).exists():
        return out_dir
    return warm_start_tiny_model(model_dir, out_dir, seed=recipe.seed, steps=recipe.steps, noise=recipe.noise)


def boxed_accuracy(
    model, tokenizer, pairs: list[tuple[int, int]], samples: int = 1, greedy: bool = True
) -> float:
    """Share of answers to ``a+b`` that the math verifier accepts (HF generate, CPU).

    Greedy decoding asks what the model believes; sampling at temperature 1 (``greedy=False``)
    is what the rollout engine sees at the start of a run.
    """
    import torch

    from vime.rollout.rm_hub import rule_based_reward
    from vime.utils.types import Sample

    prompts = [chat_prompt(tokenizer, a, b) for a, b in pairs for _ in range(samples)]
    labels = [str(a + b) for a, b in pairs for _ in range(samples)]
    tokenizer.padding_side = "left"
    batch = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(
            **batch,
            max_new_tokens=8,
            do_sample=not greedy,
            temperature=1.0,
            top_k=0,
            top_p=1.0,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
    texts = tokenizer.batch_decode(out[:, batch["input_ids"].shape[1] :], skip_special_tokens=True)
    right = [
        bool(rule_based_reward("math", Sample(prompt=p, response=t, label=y)))
        for p, t, y in zip(prompts, texts, labels, strict=True)
    ]
    return sum(right) / len(right)
