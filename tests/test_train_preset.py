"""The tiny-cpu preset: its defaults, what it builds (model, warm start, data), and the opt-in shaped reward."""

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from vime.presets import PRESETS, prepare_preset, preset_defaults, shaped_arithmetic_reward, tiny_cpu_reward


@pytest.mark.parametrize(
    ("response", "label", "boxed", "expected"),
    [
        ("\\boxed{7}", "7", True, 1.0),  # the real answer, boxed: the full math reward
        ("", "7", False, 0.0),
        ("hello", "7", False, 0.0),
        ("7", "7", False, 0.2 + 0.3 + 0.4),  # right value, no box
        ("71", "7", False, 0.2 + 0.3),  # right first digit, wrong number
        ("ab12", "7", False, 0.2 * 2 / 4),  # digits, wrong ones
        ("x-3", "-3", False, 0.2 / 3 + 0.3 + 0.4),
    ],
)
def test_shaped_reward_table(response, label, boxed, expected):
    assert shaped_arithmetic_reward(response, label, boxed) == pytest.approx(expected)


def test_tiny_cpu_reward_uses_the_math_verifier():
    sample = SimpleNamespace(response="so \\boxed{4}", label="4", metadata={}, index=0)
    assert asyncio.run(tiny_cpu_reward(None, sample)) == 1.0
    sample.response = "so \\boxed{5}"
    assert asyncio.run(tiny_cpu_reward(None, sample)) < 1.0


def test_unknown_preset_is_one_line():
    with pytest.raises(KeyError, match="unknown --preset 'x': choose one of tiny-cpu"):
        preset_defaults("x")


def test_prepare_builds_model_and_data_once(tmp_path, monkeypatch):
    import vime.warm_start as ws

    monkeypatch.setenv("VIME_CACHE_DIR", str(tmp_path))
    # a 2-step recipe keeps this fast; the real recipe is exercised by tests/test_warm_start.py
    monkeypatch.setattr(ws, "DEFAULT_RECIPE", ws.WarmStartRecipe(steps=2))
    args = SimpleNamespace(hf_checkpoint=None, prompt_data=None)
    prepare_preset("tiny-cpu", args)
    assert (tmp_path / "tiny-cpu" / "model" / "config.json").exists()
    warm = Path(args.hf_checkpoint)  # the preset trains the warm start, not the random model
    assert warm.parent == tmp_path / "tiny-cpu" and warm.name.startswith("warm-start-")
    assert (warm / ws.RECIPE_FILE).exists() and (warm / "tokenizer.json").exists()
    rows = [json.loads(line) for line in Path(args.prompt_data).read_text().splitlines()]
    assert all(0 <= int(row["label"]) <= 8 for row in rows)  # single-digit answers: a + b, both <= 4
    mtime = (tmp_path / "tiny-cpu" / "model" / "config.json").stat().st_mtime
    warm_mtime = (warm / "model.safetensors").stat().st_mtime_ns
    again = SimpleNamespace(hf_checkpoint=None, prompt_data=None)
    prepare_preset("tiny-cpu", again)
    assert (tmp_path / "tiny-cpu" / "model" / "config.json").stat().st_mtime == mtime  # cached
    assert again.hf_checkpoint == str(warm) and (warm / "model.safetensors").stat().st_mtime_ns == warm_mtime
    assert PRESETS["tiny-cpu"]["update_weights_interval"] == 1


def test_preset_rewards_with_the_plain_verifier():
    """The learning run's reward is the math verdict itself (mean reward = accuracy)."""
    assert PRESETS["tiny-cpu"]["rm_type"] == "math"
    assert "custom_rm_path" not in PRESETS["tiny-cpu"]


def test_user_checkpoint_skips_the_warm_start(tmp_path, monkeypatch):
    monkeypatch.setenv("VIME_CACHE_DIR", str(tmp_path))
    args = SimpleNamespace(hf_checkpoint="/my/model", prompt_data="/my/data.jsonl")
    prepare_preset("tiny-cpu", args)
    assert args.hf_checkpoint == "/my/model" and not (tmp_path / "tiny-cpu").exists()
