"""slime's --custom-config-path and --loss-mask-type: each changes what vime does (tests fail if ignored)."""

from __future__ import annotations

import pytest

from vime.utils.arguments import parse_args
from vime.utils.mask_utils import MultiTurnLossMaskGenerator


def _base(model_dir) -> list[str]:
    return ["--debug-train-only", "--hf-checkpoint", str(model_dir), "--rollout-batch-size", "2",
            "--n-samples-per-prompt", "2", "--num-rollout", "1"]  # fmt: skip


def test_custom_config_keys_become_args(tiny_model_dir, tmp_path):
    config = tmp_path / "mis.yaml"
    config.write_text("use_tis: true\ntis_clip: 3.0\nmy_plugin_threshold: 0.25\n")
    args = parse_args(_base(tiny_model_dir) + ["--custom-config-path", str(config)])
    assert args.use_tis is True and args.tis_clip == 3.0 and args.my_plugin_threshold == 0.25


def test_a_bad_custom_config_is_one_line(tiny_model_dir, tmp_path, capsys):
    config = tmp_path / "bad.yaml"
    config.write_text("- just\n- a list\n")
    with pytest.raises(SystemExit):
        parse_args(_base(tiny_model_dir) + ["--custom-config-path", str(config)])
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "must hold a mapping" in err


def test_distill_qwen_masks_the_raw_last_message(tiny_model_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    messages = [{"role": "user", "content": "What is 2+3?"}, {"role": "assistant", "content": "5"}]
    ids, mask = MultiTurnLossMaskGenerator(tok, "distill_qwen").get_loss_mask(messages)
    prompt = tok.apply_chat_template(messages[:1], tokenize=False, add_generation_prompt=True)
    prompt_ids = tok.encode(prompt, add_special_tokens=False)
    answer_ids = tok.encode("5", add_special_tokens=False)
    assert ids == prompt_ids + answer_ids and mask == [0] * len(prompt_ids) + [1] * len(answer_ids)
    # the template-based masks (qwen / qwen3) train the rendered turn, end-of-turn tokens included
    t_ids, t_mask = MultiTurnLossMaskGenerator(tok, "qwen3").get_loss_mask(messages)
    assert (t_ids, t_mask) != (ids, mask) and sum(t_mask) > sum(mask)


def test_loss_mask_type_reaches_parse_args(tiny_model_dir):
    assert (
        parse_args(_base(tiny_model_dir) + ["--loss-mask-type", "distill_qwen"]).loss_mask_type
        == "distill_qwen"
    )


@pytest.mark.parametrize("name", ["qwen2", "Qwen3", "qwen2.5-7b"])
def test_model_name_of_the_checkpoints_family_is_accepted(tiny_model_dir, name):
    """slime picks the weight converter by --model-name; vime converts by config.json, so a name that
    picks the same converter as the checkpoint (a Qwen2 model here) is the same conversion."""
    assert parse_args(_base(tiny_model_dir) + ["--model-name", name]).model_name == name


@pytest.mark.parametrize(
    "name,said",
    [
        ("llama", "selects slime's llama weight conversion, but --hf-checkpoint is a qwen2 model"),
        ("minimax_m2", "selects slime's minimaxm2 weight conversion"),
        ("gpt-oss", "slime has no weight converter of that name"),
    ],
)
def test_model_name_of_another_family_is_one_line(tiny_model_dir, capsys, name, said):
    with pytest.raises(SystemExit):
        parse_args(_base(tiny_model_dir) + ["--model-name", name])
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and said in err and "drop" in err, err
