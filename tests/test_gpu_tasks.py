"""The learning-run reward of the GPU benchmarks (benchmarks/gpu_tasks.py) on vime's tiny tokenizer."""

from __future__ import annotations

from types import SimpleNamespace

from benchmarks import gpu_tasks


def test_known_token_reward_counts_known_non_special_answer_tokens(tiny_model_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    known = tokenizer.convert_tokens_to_ids(tokenizer.tokenize("12+3"))
    special = tokenizer.eos_token_id
    unknown = len(tokenizer) + 7  # an id the model's larger vocabulary has and the tokenizer does not
    args = SimpleNamespace(hf_checkpoint=str(tiny_model_dir), rollout_max_response_len=8)
    prompt = known[:2]
    sample = SimpleNamespace(tokens=prompt + [known[0], unknown, special, known[1]], response_length=4)
    assert gpu_tasks.known_token_reward(args, sample) == 2 / 8  # out of the longest answer, not 4
    sample.tokens = prompt + [unknown] * 4
    assert gpu_tasks.known_token_reward(args, sample) == 0.0
