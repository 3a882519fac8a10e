"""The local warm start of the tiny model: deterministic, cached by recipe, and it learns something.

Real parts only: the project's tiny model, a real supervised fine-tune in torch on the CPU,
and greedy decoding with Hugging Face transformers scored by the real ``math`` verifier.
"""

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from vime.warm_start import (
    RECIPE_FILE,
    WarmStartRecipe,
    boxed_accuracy,
    cached_warm_start,
    recipe_key,
    task_pairs,
    warm_start_tiny_model,
)

SHORT_STEPS = 120  # enough to learn the format and some sums; the preset's recipe runs longer


@pytest.fixture(scope="module")
def warm_dirs(tiny_model_dir, tmp_path_factory):
    """Two warm starts with the same recipe and one with another seed, all short."""
    root = tmp_path_factory.mktemp("warm")
    first = warm_start_tiny_model(tiny_model_dir, root / "a", seed=0, steps=SHORT_STEPS, noise=0.0)
    again = warm_start_tiny_model(tiny_model_dir, root / "b", seed=0, steps=SHORT_STEPS, noise=0.0)
    other = warm_start_tiny_model(tiny_model_dir, root / "c", seed=1, steps=SHORT_STEPS, noise=0.0)
    return first, again, other


def _weights(model_dir: Path) -> dict[str, torch.Tensor]:
    return load_file(str(model_dir / "model.safetensors"))


def test_same_seed_same_weights_other_seed_differs(warm_dirs):
    first, again, other = (_weights(d) for d in warm_dirs)
    assert first.keys() == again.keys()
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert any(not torch.equal(first[k], other[k]) for k in first)


def test_greedy_accuracy_rises_above_the_random_model(tiny_model_dir, warm_dirs):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # a handful of the task's own questions (the fine-tune saw them teacher-forced), decoded
    # greedily: this checks what the model now generates, scored by the real math verifier
    task = task_pairs(4)[::3]
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    base = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir), dtype=torch.float32)
    tuned = AutoModelForCausalLM.from_pretrained(str(warm_dirs[0]), dtype=torch.float32)
    before = boxed_accuracy(base, tokenizer, task)
    after = boxed_accuracy(tuned, tokenizer, task)
    assert before == 0.0  # a random model does not write a correct boxed sum
    assert after >= 0.5, after


def test_recipe_file_and_key(tiny_model_dir, warm_dirs):
    record = json.loads((warm_dirs[0] / RECIPE_FILE).read_text())
    assert record["recipe"]["seed"] == 0 and record["recipe"]["steps"] == SHORT_STEPS
    key = recipe_key(tiny_model_dir, WarmStartRecipe(seed=0, steps=SHORT_STEPS, noise=0.0))
    assert record["key"] == key
    assert key != recipe_key(tiny_model_dir, WarmStartRecipe(seed=0, steps=SHORT_STEPS, noise=0.5))


def test_existing_out_dir_is_refused_and_kept(tiny_model_dir, warm_dirs):
    before = (warm_dirs[0] / "model.safetensors").read_bytes()
    with pytest.raises(FileExistsError, match="exists: remove it or pick another out_dir"):
        warm_start_tiny_model(tiny_model_dir, warm_dirs[0], steps=1)
    assert (warm_dirs[0] / "model.safetensors").read_bytes() == before


def test_missing_base_model_is_one_line(tmp_path):
    with pytest.raises(FileNotFoundError, match="no model in .*build it with vime.utils.tiny_model"):
        warm_start_tiny_model(tmp_path / "nothing", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_cached_warm_start_is_built_once(tiny_model_dir, tmp_path):
    recipe = WarmStartRecipe(steps=2)
    first = cached_warm_start(tiny_model_dir, tmp_path, recipe)
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    assert cached_warm_start(tiny_model_dir, tmp_path, recipe) == first
    assert (first / "model.safetensors").stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no staging dir left behind


@pytest.mark.slow
def test_preset_recipe_is_right_sometimes_not_always(tiny_model_dir, tmp_path):
    """The preset's recipe (noisy answers) leaves room for RL: clearly above 0, well below 1."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from vime.warm_start import DEFAULT_RECIPE

    out = cached_warm_start(tiny_model_dir, tmp_path, DEFAULT_RECIPE)
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    model = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32)
    torch.manual_seed(0)
    greedy = boxed_accuracy(model, tokenizer, task_pairs(4))
    sampled = boxed_accuracy(model, tokenizer, task_pairs(4), samples=8, greedy=False)
    assert 0.1 <= greedy <= 0.8, greedy
    assert 0.1 <= sampled <= 0.6, sampled
