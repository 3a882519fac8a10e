"""The tiny-cpu preset: its defaults, what it builds, and its shaped reward."""

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
    monkeypatch.setenv("VIME_CACHE_DIR", str(tmp_path))
    args = SimpleNamespace(hf_checkpoint=None, prompt_data=None)
    prepare_preset("tiny-cpu", args)
    assert (tmp_path / "tiny-cpu" / "model" / "config.json").exists()
    rows = [json.loads(line) for line in Path(args.prompt_data).read_text().splitlines()]
    assert all(0 <= int(row["label"]) <= 8 for row in rows)  # single-digit answers: a + b, both <= 4
    mtime = (tmp_path / "tiny-cpu" / "model" / "config.json").stat().st_mtime
    prepare_preset("tiny-cpu", SimpleNamespace(hf_checkpoint=None, prompt_data=None))
    assert (tmp_path / "tiny-cpu" / "model" / "config.json").stat().st_mtime == mtime  # cached
    assert PRESETS["tiny-cpu"]["update_weights_interval"] == 1
