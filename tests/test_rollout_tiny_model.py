"""The tiny local model: loadable by transformers, deterministic, digits split, chat template present."""

import hashlib

from transformers import AutoConfig, AutoTokenizer

from vime.utils.tiny_model import build_tiny_model


def test_tokenizer_splits_digits_and_round_trips(tiny_model_dir):
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    text = "What is 12+345? \\boxed{357}"
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    pieces = [tok.decode([i]) for i in ids]
    assert pieces[-4:-1] == ["3", "5", "7"]
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    assert 256 < len(tok) <= 512


def test_chat_template_is_qwen_style(tiny_model_dir):
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    text = tok.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_config_is_qwen2_with_head_dim_64(tiny_model_dir):
    cfg = AutoConfig.from_pretrained(tiny_model_dir)
    assert cfg.model_type == "qwen2" and cfg.head_dim == 64
    assert cfg.hidden_size == cfg.num_attention_heads * cfg.head_dim
    assert (tiny_model_dir / "generation_config.json").exists()


def test_same_seed_same_files_other_seed_other_weights(tiny_model_dir, tmp_path):
    def digest(path):
        return hashlib.sha256((path / "model.safetensors").read_bytes()).hexdigest()

    again = build_tiny_model(tmp_path / "again", seed=0)
    other = build_tiny_model(tmp_path / "other", seed=1)
    assert digest(again) == digest(tiny_model_dir)
    assert (again / "tokenizer.json").read_bytes() == (tiny_model_dir / "tokenizer.json").read_bytes()
    assert digest(other) != digest(tiny_model_dir)
