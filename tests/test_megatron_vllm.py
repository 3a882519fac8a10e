"""Megatron weights -> HF export -> a running vLLM CPU engine: the engine's greedy tokens are the
Megatron model's own greedy tokens (and HF's on the exported directory).

Uses the session's real engine (tests/conftest.py ``vllm_engine``) and loads the tiny model back at the
end. Megatron runs on the CPU with ``torch.cuda.current_device`` patched inside the fixture only.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("megatron.core")

from megatron_cpu_support import megatron_on_cpu

MAX_TOKENS = 16


@pytest.fixture(scope="module")
def megatron_cpu():
    yield from megatron_on_cpu()


def _megatron_greedy(actor, prompt: list[int]) -> list[int]:
    ids = torch.tensor([prompt])
    model = actor.model.eval()
    out: list[int] = []
    with torch.no_grad():
        for _ in range(MAX_TOKENS):
            pos = torch.arange(ids.shape[1]).unsqueeze(0)
            logits = model(input_ids=ids, position_ids=pos, attention_mask=None)[
                0, -1, : actor.cfg.shape.vocab_size
            ]
            nxt = int(logits.argmax())
            out.append(nxt)
            ids = torch.cat([ids, torch.tensor([[nxt]])], dim=1)
    return out


@pytest.mark.slow
def test_engine_reproduces_megatron_greedy_tokens(
    megatron_cpu, vllm_engine, tiny_model_dir, tmp_path
) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from vime.backends.megatron_utils.actor import MegatronActor, MegatronActorConfig
    from vime.backends.megatron_utils.hf_config import load_shape
    from vime.backends.megatron_utils.weight_export import export_to_hf_dir

    actor = MegatronActor(
        MegatronActorConfig(
            shape=load_shape(tiny_model_dir), dtype=torch.float32, hf_checkpoint=str(tiny_model_dir)
        ),
        optimizer_factory=lambda m: None,
    )
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is 12+7? Put the answer in \\boxed{}."}],
        add_generation_prompt=True,
        tokenize=False,
    )
    prompt = list(tokenizer(text)["input_ids"])
    original = _megatron_greedy(actor, prompt)
    with torch.no_grad():  # a different policy, as after training: seeded noise on every parameter
        g = torch.Generator().manual_seed(0)
        for p in actor.model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.05)
    expected = _megatron_greedy(actor, prompt)
    assert expected != original  # the engine must really take up the new weights to pass

    out = export_to_hf_dir(actor, tmp_path / "exported", hf_source_dir=tiny_model_dir, progress=False)
    hf = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32).eval()
    with torch.no_grad():
        hf_tokens = hf.generate(
            torch.tensor([prompt]), max_new_tokens=MAX_TOKENS, min_new_tokens=MAX_TOKENS, do_sample=False
        )[0, len(prompt) :].tolist()
    assert hf_tokens == expected

    params = {"max_tokens": MAX_TOKENS, "temperature": 0.0, "ignore_eos": True}
    try:
        vllm_engine.client.update_weights_from_disk(str(out), version="megatron-export")
        answer = vllm_engine.client.generate(prompt, params)
        assert answer["choices"][0]["token_ids"] == expected
    finally:
        vllm_engine.client.update_weights_from_disk(str(tiny_model_dir))
    assert vllm_engine.client.generate(prompt, params)["choices"][0]["token_ids"] == original
