"""Token ids and loss masks of a multi-turn chat, from the tokenizer's own chat template (slime's name).

``MultiTurnLossMaskGenerator(tokenizer).get_loss_mask(messages)`` renders the conversation with the
chat template and marks the tokens each assistant turn contributes: ``render(messages[:i + 1])`` minus
``render(messages[:i], add_generation_prompt=True)``, i.e. the turn's content and its end-of-turn
tokens, never the generation prompt (``<|im_start|>assistant\\n``) nor any system, user or tool turn.
A message with ``"step_loss_mask": 0`` is not trained on (slime's field). The template must render
each prefix of the conversation as a prefix of the whole; one that rewrites earlier turns (e.g. drops
past reasoning) is refused in one line rather than given a shifted mask.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MultiTurnLossMaskGenerator", "get_response_lengths"]


def get_response_lengths(loss_masks: list[list[int]]) -> list[int]:
    """From each mask's first 1 to its end: the span the trainer treats as the response."""
    return [len(mask) - mask.index(1) if 1 in mask else 0 for mask in loss_masks]


class ChatTemplateMismatch(ValueError):
    """The chat template renders a prefix of the conversation differently from the whole."""


LOSS_MASK_TYPES = ("qwen", "qwen3", "qwen3_5", "distill_qwen")


class MultiTurnLossMaskGenerator:
    """``tokenizer_type`` is slime's ``--loss-mask-type``. slime's qwen / qwen3 / qwen3_5 variants each
    find the assistant turns in their family's rendering; here the chat template itself locates them,
    which gives those masks for every family. ``distill_qwen`` (and ``qwen`` with a DeepSeek-distill
    tokenizer, as slime decides) is slime's other layout: the first message rendered as the prompt,
    the last message's raw text as the whole response."""

    def __init__(self, tokenizer: Any, tokenizer_type: str | None = None):
        if tokenizer_type is not None and tokenizer_type not in LOSS_MASK_TYPES:
            raise ValueError(
                f"--loss-mask-type {tokenizer_type!r}: choose one of {', '.join(LOSS_MASK_TYPES)}"
            )
        self.tokenizer = tokenizer
        self.tokenizer_type = tokenizer_type
        self.distill = tokenizer_type == "distill_qwen" or (
            tokenizer_type == "qwen" and "<｜Assistant｜>" in tokenizer.get_added_vocab()
        )

    def _distill_loss_mask(
        self, messages: list[dict], tools: list[dict] | None
    ) -> tuple[list[int], list[int]]:
        prompt = self.tokenizer.apply_chat_template(
            messages[:1], tools=tools, tokenize=False, add_generation_prompt=True
        )
        prompt_ids = list(self.tokenizer.encode(prompt, add_special_tokens=False))
        response_ids = list(self.tokenizer.encode(messages[-1]["content"], add_special_tokens=False))
        trained = 1 if messages[-1].get("step_loss_mask", 1) == 1 else 0
        return prompt_ids + response_ids, [0] * len(prompt_ids) + [trained] * len(response_ids)

    def _ids(self, messages: list[dict], tools: list[dict] | None, generation_prompt: bool) -> list[int]:
        if not messages:
            return []
        text = self.tokenizer.apply_chat_template(
            messages, tools=tools, tokenize=False, add_generation_prompt=generation_prompt
        )
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def get_loss_mask(
        self, messages: list[dict], tools: list[dict] | None = None
    ) -> tuple[list[int], list[int]]:
        """``(token_ids, loss_mask)`` of the whole conversation; 1 exactly on the assistant turns' tokens."""
        if self.distill:
            return self._distill_loss_mask(messages, tools)
        token_ids = self._ids(messages, tools, generation_prompt=False)
        loss_mask = [0] * len(token_ids)
        for i, message in enumerate(messages):
            if message.get("role") != "assistant" or message.get("step_loss_mask", 1) != 1:
                continue
            start = len(self._ids(messages[:i], tools, generation_prompt=True))
            turn = self._ids(messages[: i + 1], tools, generation_prompt=False)
            if token_ids[: len(turn)] != turn or turn[:start] != self._ids(messages[:i], tools, True):
                raise ChatTemplateMismatch(
                    f"turn {i}: the chat template renders the conversation up to this turn differently "
                    "from the whole conversation, so its tokens cannot be located; use a template that "
                    "keeps earlier turns as they are"
                )
            loss_mask[start : len(turn)] = [1] * (len(turn) - start)
        return token_ids, loss_mask

    def get_response_lengths(self, loss_masks: list[list[int]]) -> list[int]:
        return get_response_lengths(loss_masks)

    def get_text_from_loss_mask(self, token_ids: list[int], loss_masks: list[int]) -> list[str]:
        """The decoded text of each run of masked tokens (to eyeball what is trained on)."""
        spans, current = [], []
        for token, bit in zip(token_ids, loss_masks, strict=True):
            if bit:
                current.append(token)
            elif current:
                spans.append(current)
                current = []
        if current:
            spans.append(current)
        return [self.tokenizer.decode(span) for span in spans]
