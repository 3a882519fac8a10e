"""--eval-config (slime's YAML of eval datasets) and --eval-tool-key: how each dataset's settings are
resolved, what is refused, and an eval on the session's real engine that follows them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vime.rollout.eval_rollout import _dataset, eval_dataset_configs
from vime.utils.arguments import parse_args
from vime.utils.eval_config import EvalConfigError, read_eval_config


def _base(model_dir, *extra: str) -> list[str]:
    return ["--hf-checkpoint", str(model_dir), "--rollout-batch-size", "2", "--n-samples-per-prompt", "2",
            "--num-rollout", "4", *extra]  # fmt: skip


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture
def two_sets(tmp_path) -> tuple[Path, Path]:
    arith = _jsonl(tmp_path / "arith.jsonl", [{"q": f"What is {a}+1?", "a": str(a + 1)} for a in range(3)])
    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
    tooled = _jsonl(
        tmp_path / "tooled.jsonl",
        [{"question": "Add 2 and 2.", "answer": "4", "my_tools": tools, "metadata": {"source": "t"}}],
    )
    return arith, tooled


def _write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "eval.yaml"
    path.write_text(text)
    return path


def test_dataset_entry_then_defaults_then_flags(tiny_model_dir, tmp_path, two_sets):
    arith, tooled = two_sets
    config = _write_config(
        tmp_path,
        f"""
eval:
  defaults:
    n_samples_per_eval_prompt: 3
    max_response_len: 12
    input_key: q
    label_key: a
  datasets:
    - name: arith
      path: {arith}
      temperature: 0.3
      rm_type: math
    - name: tooled
      path: {tooled}
      input_key: question
      label_key: answer
      max_response_len: 5
      n_samples_per_eval_prompt: 1
      metadata_overrides: {{difficulty: hard}}
""",
    )
    args = parse_args(
        _base(tiny_model_dir, "--eval-config", str(config), "--eval-temperature", "0.9", "--eval-top-p", "0.8",
              "--eval-tool-key", "my_tools", "--save-interval", "2")
    )  # fmt: skip
    arith_cfg, tooled_cfg = args.eval_datasets
    assert (arith_cfg.name, arith_cfg.path) == ("arith", str(arith))
    assert arith_cfg.temperature == 0.3 and tooled_cfg.temperature == 0.9  # entry, else --eval-temperature
    assert arith_cfg.top_p == tooled_cfg.top_p == 0.8
    assert (arith_cfg.max_response_len, tooled_cfg.max_response_len) == (12, 5)  # defaults, else entry
    assert (arith_cfg.n_samples_per_eval_prompt, tooled_cfg.n_samples_per_eval_prompt) == (3, 1)
    assert (arith_cfg.input_key, tooled_cfg.input_key) == ("q", "question")
    assert arith_cfg.tool_key == tooled_cfg.tool_key == "my_tools"  # --eval-tool-key
    assert arith_cfg.sampling_params()["max_tokens"] == 12
    # slime keeps --eval-prompt-data in step with the config, so the schedule evaluates
    assert args.eval_prompt_data == ["arith", str(arith), "tooled", str(tooled)] and args.eval_interval == 2
    assert tooled_cfg.inject_metadata({"source": "t"}) == {"source": "t", "difficulty": "hard"}
    assert arith_cfg.inject_metadata({})["rm_type"] == "math"


def test_mapping_form_and_plain_pairs(tiny_model_dir, tmp_path, two_sets):
    arith, _ = two_sets
    config = _write_config(tmp_path, f"datasets:\n  arith: {{path: {arith}, input_key: q}}\n")
    args = parse_args(_base(tiny_model_dir, "--eval-config", str(config)))
    assert [(d.name, d.input_key) for d in args.eval_datasets] == [("arith", "q")]
    args = parse_args(_base(tiny_model_dir, "--eval-prompt-data", "a", str(arith), "--eval-input-key", "q"))
    assert [(d.name, d.input_key, d.tool_key) for d in args.eval_datasets] == [("a", "q", "tools")]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("eval:\n  datasets:\n    - {name: a, path: x.jsonl, multimodal_keys: {image: img}}\n",
         "key 'multimodal_keys' is refused: vime has no vision-language rollout"),
        ("eval:\n  datasets:\n    - {name: a, path: x.jsonl, temprature: 0.5}\n", "unknown key 'temprature'"),
        ("eval:\n  defaults: {min_eval_samples: 4}\n  datasets:\n    - {name: a, path: x.jsonl}\n",
         "eval.defaults: key 'min_eval_samples' is refused"),
        ("eval:\n  datasets:\n    - {name: a, path: '${oc.env:DATA}/a.jsonl'}\n", "OmegaConf interpolation"),
        ("eval:\n  datasets:\n    - {path: x.jsonl}\n", "entry 0 needs a `name` field"),
        ("eval:\n  datasets:\n    - {name: a}\n", "dataset 'a' has no path"),
        ("eval:\n  datasets: []\n", "defines no datasets"),
        ("eval: [\n", "is not valid YAML"),
    ],
)  # fmt: skip
def test_bad_configs_are_one_line(tmp_path, text, needle):
    config = _write_config(tmp_path, text)
    with pytest.raises(EvalConfigError) as exc:
        read_eval_config(parse_args([], validate=False), str(config))
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_a_bad_config_stops_the_launch_in_one_line(tiny_model_dir, tmp_path, capsys):
    config = _write_config(
        tmp_path, "eval:\n  datasets:\n    - {name: a, path: x.jsonl, app_service: http://h}\n"
    )
    with pytest.raises(SystemExit):
        parse_args(_base(tiny_model_dir, "--eval-config", str(config)))
    err = capsys.readouterr().err.strip()
    assert "--eval-config" in err and "'app_service' is refused" in err and "\n" not in err


def test_eval_tool_key_reads_the_tools_of_each_prompt(tiny_model_dir, two_sets):
    _, tooled = two_sets
    flags = [
        "--eval-prompt-data",
        "t",
        str(tooled),
        "--eval-input-key",
        "question",
        "--eval-label-key",
        "answer",
    ]
    with_key = parse_args(_base(tiny_model_dir, *flags, "--eval-tool-key", "my_tools"))
    (prompt,) = _dataset(with_key, eval_dataset_configs(with_key)[0]).origin_samples
    assert prompt.metadata["tools"][0]["function"]["name"] == "add" and prompt.metadata["source"] == "t"
    without = parse_args(_base(tiny_model_dir, *flags))
    (prompt,) = _dataset(without, eval_dataset_configs(without)[0]).origin_samples
    assert "tools" not in prompt.metadata  # the rows have no "tools" key, the default --tool-key


@pytest.mark.slow
def test_eval_follows_each_datasets_settings(make_rollout_args, rollout_manager, tmp_path, two_sets):
    from vime.rollout.vllm_rollout import generate_rollout

    arith, tooled = two_sets
    config = _write_config(
        tmp_path,
        f"""
eval:
  defaults: {{n_samples_per_eval_prompt: 2, max_response_len: 3}}
  datasets:
    arith: {{path: {arith}, input_key: q, label_key: a, rm_type: random}}
    tooled: {{path: {tooled}, input_key: question, label_key: answer, n_samples_per_eval_prompt: 3,
              max_response_len: 7, rm_type: math, metadata_overrides: {{difficulty: hard}}}}
""",
    )
    args = make_rollout_args("--eval-config", str(config), "--eval-tool-key", "my_tools")
    args.vllm_router_ip = rollout_manager.args.vllm_router_ip
    args.vllm_router_port = rollout_manager.args.vllm_router_port
    output = generate_rollout(args, 0, None, evaluation=True).data
    assert sorted(output) == ["arith", "tooled"]
    arith_samples, tooled_samples = output["arith"]["samples"], output["tooled"]["samples"]
    assert len(arith_samples) == 3 * 2 and len(tooled_samples) == 1 * 3
    assert max(s.response_length for s in arith_samples) <= 3 < max(s.response_length for s in tooled_samples)
    assert all(s.response_length <= 7 for s in tooled_samples)
    assert {s.metadata["rm_type"] for s in arith_samples} == {"random"}
    assert all(s.metadata["difficulty"] == "hard" and s.metadata["tools"] for s in tooled_samples)
