"""SFT data: multi-turn loss masks from the chat template (assistant turns only), against a hand reference."""

from __future__ import annotations

import json

import pytest
from transformers import AutoTokenizer

from vime.rollout.sft_rollout import generate_rollout, sft_sample
from vime.utils.mask_utils import MultiTurnLossMaskGenerator, get_response_lengths
from vime.utils.types import Sample

CONVERSATION = [
    {"role": "system", "content": "You add numbers."},
    {"role": "user", "content": "1+2"},
    {"role": "assistant", "content": "\\boxed{3}"},
    {"role": "user", "content": "and 2+2?"},
    {"role": "assistant", "content": "that is \\boxed{4}"},
]


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    return AutoTokenizer.from_pretrained(str(tiny_model_dir), local_files_only=True)


def _hand_mask(tokenizer, messages) -> tuple[list[int], list[int]]:
    """The reference: character spans of each trained assistant turn (content + end of turn) in the
    rendered text, mapped to tokens through the tokenizer's offsets (no prefix rendering involved)."""
    text, spans = "", []
    for message in messages:
        head = f"<|im_start|>{message['role']}\n"
        body = f"{message['content']}<|im_end|>\n"
        if message["role"] == "assistant" and message.get("step_loss_mask", 1) == 1:
            spans.append((len(text) + len(head), len(text) + len(head) + len(body)))
        text += head + body
    assert text == tokenizer.apply_chat_template(messages, tokenize=False)
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    mask = [int(any(s <= a and b <= e for s, e in spans)) for a, b in encoded["offset_mapping"]]
    return encoded["input_ids"], mask


def test_masks_are_exactly_the_assistant_turns(tokenizer):
    ids, mask = MultiTurnLossMaskGenerator(tokenizer).get_loss_mask(CONVERSATION)
    assert (ids, mask) == _hand_mask(tokenizer, CONVERSATION)
    trained = MultiTurnLossMaskGenerator(tokenizer).get_text_from_loss_mask(ids, mask)
    assert trained == ["\\boxed{3}<|im_end|>\n", "that is \\boxed{4}<|im_end|>\n"]


def test_step_loss_mask_zero_leaves_a_turn_out(tokenizer):
    messages = [dict(m) for m in CONVERSATION]
    messages[2]["step_loss_mask"] = 0
    ids, mask = MultiTurnLossMaskGenerator(tokenizer).get_loss_mask(messages)
    assert (ids, mask) == _hand_mask(tokenizer, messages)
    assert MultiTurnLossMaskGenerator(tokenizer).get_text_from_loss_mask(ids, mask) == [
        "that is \\boxed{4}<|im_end|>\n"
    ]


def test_a_template_that_rewrites_earlier_turns_is_refused(tokenizer):
    rewriting = AutoTokenizer.from_pretrained(tokenizer.name_or_path, local_files_only=True)
    rewriting.chat_template = (  # drops every assistant turn but the last, as reasoning templates do
        "{% for m in messages %}{% if m['role'] != 'assistant' or loop.last %}"
        "{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    )
    with pytest.raises(ValueError, match="renders the conversation up to this turn differently"):
        MultiTurnLossMaskGenerator(rewriting).get_loss_mask(CONVERSATION)


def test_sft_sample_takes_the_response_from_the_first_assistant_token(tokenizer):
    sample = sft_sample(Sample(index=0, prompt=CONVERSATION), MultiTurnLossMaskGenerator(tokenizer))
    ids, mask = _hand_mask(tokenizer, CONVERSATION)
    assert sample.tokens == ids
    assert sample.response_length == get_response_lengths([mask])[0] == len(mask) - mask.index(1)
    assert sample.loss_mask == mask[mask.index(1) :] and sample.reward == 0.0
    with pytest.raises(ValueError, match="no assistant turn"):
        sft_sample(Sample(index=1, prompt=CONVERSATION[:2]), MultiTurnLossMaskGenerator(tokenizer))


def test_generate_rollout_reads_the_data_source(tiny_model_dir, tmp_path):
    from vime.rollout.data_source import make_data_source
    from vime.utils.arguments import parse_args

    data = tmp_path / "chat.jsonl"
    data.write_text("\n".join(json.dumps({"messages": CONVERSATION[i % 2 :]}) for i in range(4)) + "\n")
    args = parse_args(
        ["--debug-train-only", "--hf-checkpoint", str(tiny_model_dir), "--prompt-data", str(data),
         "--input-key", "messages", "--rollout-function-path", "vime.rollout.sft_rollout.generate_rollout",
         "--loss-type", "sft_loss", "--rollout-batch-size", "2", "--num-rollout", "2"]
    )  # fmt: skip
    out = generate_rollout(args, 0, make_data_source(args))
    samples = [s for group in out.samples for s in group]
    assert len(samples) == 2 and all(sum(s.loss_mask) > 0 for s in samples)
    assert all(len(s.loss_mask) == s.response_length for s in samples)
