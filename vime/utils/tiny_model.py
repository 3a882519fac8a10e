"""Build a tiny Qwen2-shaped model and tokenizer locally, so tests and demos never touch a model hub.

The model has random weights (seeded) and head dimension 64 (vLLM's CPU attention kernels reject
smaller heads). The tokenizer is a byte-level BPE trained on a small generated corpus of
arithmetic, chat words and ``\\boxed{}`` answers; digits are always split into single tokens so
the arithmetic task stays learnable. A Qwen-style chat template is included.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"
VOCAB_SIZE = 512

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

_WORDS = [
    "what",
    "is",
    "the",
    "answer",
    "put",
    "your",
    "final",
    "in",
    "a",
    "box",
    "please",
    "compute",
    "solve",
    "think",
    "step",
    "by",
    "so",
    "we",
    "get",
    "add",
    "plus",
    "minus",
    "times",
    "sum",
    "of",
    "and",
    "result",
    "equals",
    "question",
    "user",
    "assistant",
    "system",
    "you",
    "are",
    "helpful",
    "number",
    "first",
    "then",
    "next",
    "finally",
    "therefore",
    "yes",
    "no",
    "ok",
]


def _corpus(rng: random.Random, n_lines: int = 4000) -> list[str]:
    """Generated training text for the tokenizer: arithmetic, chat turns and boxed answers."""
    lines = []
    for _ in range(n_lines):
        a, b = rng.randint(0, 99), rng.randint(0, 99)
        op = rng.choice("+-*")
        result = eval(f"{a}{op}{b}")  # our own two integers and an operator
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 8)))
        lines.append(f"What is {a}{op}{b}? {words}")
        lines.append(f"{a}{op}{b}={result}. The answer is \\boxed{{{result}}}.")
        lines.append(
            f"<|im_start|>user\n{words}<|im_end|>\n<|im_start|>assistant\n\\boxed{{{result}}}<|im_end|>"
        )
    return lines


def build_tokenizer(dest: Path, seed: int = 0):
    """Train the byte-level BPE tokenizer and save it as a Hugging Face fast tokenizer in ``dest``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(random.Random(seed)), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        bos_token=None,
        unk_token=None,
        additional_special_tokens=SPECIAL_TOKENS[1:],
        model_max_length=1024,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(dest))
    return fast


def build_tiny_model(dest: Path, seed: int = 0) -> Path:
    """Write a tiny Qwen2 model (safetensors, config, generation config) and tokenizer to ``dest``.

    Deterministic for a given seed: the same seed gives the same weights and vocabulary.
    """
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(dest, seed)
    vocab_size = len(tokenizer)
    eos_id = tokenizer.convert_tokens_to_ids(EOS_TOKEN)
    pad_id = tokenizer.convert_tokens_to_ids(PAD_TOKEN)
    config = Qwen2Config(
        vocab_size=vocab_size,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=64,
        max_position_embeddings=1024,
        tie_word_embeddings=False,
        bos_token_id=eos_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        dtype="float32",
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).to(torch.float32)
    model.generation_config = GenerationConfig(eos_token_id=eos_id, pad_token_id=pad_id, do_sample=True)
    model.save_pretrained(str(dest), safe_serialization=True)
    (dest / "vime_tiny_model.json").write_text(json.dumps({"seed": seed, "vocab_size": vocab_size}) + "\n")
    return dest


def build_tiny_moe_model(dest: Path, seed: int = 0) -> Path:
    """A tiny Qwen3-MoE model (transformers' own ``Qwen3MoeForCausalLM``) with the same tokenizer.

    Two MoE layers of 8 experts, 2 routed per token, renormalised top-k weights (as Qwen3-30B-A3B);
    the routers get larger random weights than the default init so that routing differs per token.
    """
    import torch
    from transformers import GenerationConfig, Qwen3MoeConfig, Qwen3MoeForCausalLM

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(dest, seed)
    vocab_size = len(tokenizer)
    eos_id = tokenizer.convert_tokens_to_ids(EOS_TOKEN)
    pad_id = tokenizer.convert_tokens_to_ids(PAD_TOKEN)
    config = Qwen3MoeConfig(
        vocab_size=vocab_size,
        hidden_size=128,
        intermediate_size=256,
        moe_intermediate_size=64,
        num_experts=8,
        num_experts_per_tok=2,
        norm_topk_prob=True,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=64,
        max_position_embeddings=1024,
        tie_word_embeddings=False,
        bos_token_id=eos_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        dtype="float32",
    )
    torch.manual_seed(seed)
    model = Qwen3MoeForCausalLM(config).to(torch.float32)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("mlp.gate.weight"):
                param.normal_(0.0, 0.5)
    model.generation_config = GenerationConfig(eos_token_id=eos_id, pad_token_id=pad_id, do_sample=True)
    model.save_pretrained(str(dest), safe_serialization=True)
    (dest / "vime_tiny_model.json").write_text(
        json.dumps({"seed": seed, "vocab_size": vocab_size, "family": "qwen3_moe"}) + "\n"
    )
    return dest
