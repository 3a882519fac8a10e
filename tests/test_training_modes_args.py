"""The training-mode flags: each bad combination is refused in one line, and each flag reaches its code."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from vime.utils.arguments import parse_args


def _parse(model_dir: Path, *extra: str):
    return parse_args(
        ["--debug-train-only", "--hf-checkpoint", str(model_dir), "--rollout-batch-size", "2",
         "--n-samples-per-prompt", "2", "--num-rollout", "2", *extra]
    )  # fmt: skip


@pytest.mark.parametrize(
    "flags,message",
    [
        (("--use-opd",), "--use-opd needs --opd-type"),
        (("--opd-type", "vllm"), "--use-opd is not"),
        (("--use-opd", "--opd-type", "megatron"), "needs --opd-teacher-load"),
        (("--use-opd", "--opd-type", "vllm", "--opd-teacher-load", "/tmp"), "is for --opd-type megatron"),
        (("--use-opd", "--opd-type", "vllm", "--rollout-temperature", "0.7"), "temperature 1"),
        (("--loss-type", "custom_loss"), "needs --custom-loss-function-path"),
        (("--custom-loss-function-path", "a.b"), "only with --loss-type custom_loss"),
        (("--custom-tis-function-path", "a.b"), "add --use-tis"),
        (("--lora-rank", "-1"), "--lora-rank must be >= 0"),
        (("--lora-rank", "8", "--target-modules", "q_proj,wq"), "choose from all-linear"),
        (("--lora-rank", "8", "--target-modules", "q_proj", "--exclude-modules", "q_proj"), "no module"),
        (("--lora-rank", "8", "--lora-dropout", "1.0"), "--lora-dropout must be in"),
        (("--lora-rank", "1024"), "largest --max-lora-rank"),
        (("--lora-rank", "8", "--advantage-estimator", "ppo"), "critic would train in full"),
        (("--lora-adapter-path", "/nonexistent"), "no readable adapter_config.json"),
    ],
)
def test_bad_combinations_are_one_line(tiny_model_dir, capsys, flags, message):
    with pytest.raises(SystemExit) as exc:
        _parse(tiny_model_dir, *flags)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_adapter_rank_comes_from_the_adapter(tiny_model_dir, tmp_path):
    from vime.utils.lora_settings import LoraSettings

    (tmp_path / "adapter_config.json").write_text(json.dumps({"r": 16}))
    settings = LoraSettings.from_args(_parse(tiny_model_dir, "--lora-adapter-path", str(tmp_path)))
    assert settings.enabled and settings.rank == 16
    with pytest.raises(SystemExit):
        _parse(tiny_model_dir, "--lora-adapter-path", str(tmp_path), "--lora-rank", "8")


def test_lora_sync_and_engine_flags(tiny_model_dir):
    from vime.utils.lora_settings import LoraSettings, engine_lora_flags

    adapter = LoraSettings.from_args(_parse(tiny_model_dir, "--lora-rank", "12"))
    assert adapter.sync == "adapter" and adapter.sends_adapter
    assert engine_lora_flags(adapter) == [["--enable-lora"], ["--max-lora-rank", "16"], ["--max-loras", "1"]]
    merged = LoraSettings.from_args(_parse(tiny_model_dir, "--lora-rank", "12", "--lora-sync", "merged"))
    assert not merged.sends_adapter and engine_lora_flags(merged) == []
    args = _parse(tiny_model_dir, "--lora-rank", "8")
    args.rollout_external_engine_addrs = ["http://elsewhere:8000"]  # engines vime did not start
    assert LoraSettings.from_args(args).sync == "merged"


def test_rollout_sample_hook_runs_before_the_reward(tiny_model_dir):
    from vime.rollout.generate_and_rm import generate_and_rm
    from vime.rollout.sample_hooks import set_current_rollout_id
    from vime.utils.types import Sample

    def score(*hooks: str) -> Sample:
        args = _parse(
            tiny_model_dir, "--rm-type", "math",
            "--custom-generate-function-path", "tests.training_mode_hooks.fake_generate",
            *[x for hook in hooks for x in ("--rollout-sample-hook-path", hook)],
        )  # fmt: skip
        set_current_rollout_id(5)
        try:
            return asyncio.run(
                generate_and_rm(args, Sample(index=0, prompt="1+1", label="2"), {"max_tokens": 4})
            )
        finally:
            set_current_rollout_id(None)

    assert score().reward == 0
    hooked = score("tests.training_mode_hooks.answer_two")
    assert hooked.reward == 1 and hooked.metadata["hooked_at"] == 5


def test_teacher_log_probs_come_from_vllms_prompt_logprobs():
    from vime.rollout.on_policy_distillation import teacher_log_probs_from_answer, teacher_url

    assert teacher_url("http://host:9/generate") == "http://host:9/v1/completions"
    tokens = [5, 6, 7, 8]
    answer = {"choices": [{"prompt_logprobs": [None] + [{str(t): {"logprob": -t / 10}} for t in tokens[1:]]}]}
    assert teacher_log_probs_from_answer(answer, tokens, 2) == [-0.7, -0.8]
    with pytest.raises(RuntimeError, match="vLLM server"):
        teacher_log_probs_from_answer({"choices": [{"prompt_logprobs": [None]}]}, tokens, 2)
